"""`make demo` really mirrors: run it as a user would (with --once so it ends by itself)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.integration]


def _demo(workdir: Path) -> subprocess.CompletedProcess[str]:
    args = ["--once", "--records", "300", "--workdir", str(workdir), "--timeout", "180"]
    return subprocess.run(
        [sys.executable, "-m", "mm2.cli.demo", *args],
        capture_output=True,
        text=True,
        timeout=400,
        check=False,
    )


def test_demo_mirrors_every_record_and_stops_cleanly_twice(tmp_path: Path) -> None:
    """The second run reuses the first run's clusters and records: it must count its own."""
    for run in (1, 2):
        result = _demo(tmp_path)
        log = (tmp_path / "mirror.log").read_text(errors="replace")[-3000:]
        assert result.returncode == 0, f"run {run}: " + result.stdout + result.stderr + log
        assert "every record arrived on backup once" in result.stdout
        for topic in ("demo-orders", "demo-payments", "demo-clicks"):
            line = next(ln for ln in result.stdout.splitlines() if f"backup:primary.{topic}" in ln)
            assert line.split()[-1] == "300", f"run {run}: {line}"
        assert "stopped cleanly" in log
