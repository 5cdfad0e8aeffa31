"""The `connect-mirror-maker` console script as users run it, in a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(sys.executable).parent / "connect-mirror-maker"

pytestmark = pytest.mark.e2e


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    assert SCRIPT.exists(), f"console script not installed at {SCRIPT}"
    return subprocess.run(
        [str(SCRIPT), *args], capture_output=True, text=True, timeout=60, cwd=ROOT
    )


def test_print_config_on_example() -> None:
    done = cli(str(ROOT / "mm2.properties.example"), "--print-config")
    assert done.returncode == 0, done.stderr
    flows = json.loads(done.stdout)["flows"]
    assert [(f["source"], f["target"], f["enabled"]) for f in flows] == [
        ("primary", "backup", True),
        ("backup", "primary", False),
    ]


def test_broken_file_one_line_exit_2() -> None:
    broken = ROOT / "tests/unit/config/broken_configs/07_bad_enabled.properties"
    done = cli(str(broken))
    assert done.returncode == 2
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert "07_bad_enabled.properties:4: a->b.enabled" in lines[0]
    assert "Traceback" not in done.stderr


def test_debug_shows_traceback() -> None:
    done = cli(str(ROOT / "tests/unit/config/broken_configs/07_bad_enabled.properties"), "--debug")
    assert done.returncode != 0
    assert "Traceback" in done.stderr
