"""Where things are in the checkout, for tests that read its files (docs, deploy/, Docker)."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
