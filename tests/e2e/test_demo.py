"""`make demo` really mirrors: run it as a user would (with --once so it ends by itself)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
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


def test_a_terminated_demo_stops_the_mirror_and_both_clusters(tmp_path: Path) -> None:
    """SIGTERM (as `timeout make demo` or a service manager sends) while the mirror runs: the
    demo must take its brokers and the mirror down with it, not leave them running."""
    args = ["--records", "100", "--workdir", str(tmp_path), "--timeout", "180"]
    demo = subprocess.Popen(
        [sys.executable, "-u", "-m", "mm2.cli.demo", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert demo.stdout is not None
    lines: list[str] = []
    children: set[int] = set()
    deadline = time.monotonic() + 300
    for line in demo.stdout:  # until the mirror is running and copying
        lines.append(line)
        children |= {c.pid for c in psutil.Process(demo.pid).children(recursive=True)}
        if "the mirror keeps running" in line or time.monotonic() > deadline:
            break
    assert any("every record arrived" in ln for ln in lines), "".join(lines)
    children |= {c.pid for c in psutil.Process(demo.pid).children(recursive=True)}
    assert len(children) >= 3, "two brokers and a mirror expected"
    demo.send_signal(signal.SIGTERM)
    rest, _ = demo.communicate(timeout=180)
    assert demo.returncode == 0, "".join(lines) + rest
    assert "stopped: mirror and both clusters." in rest
    assert "Connection refused" not in rest  # no client of the demo outlives the clusters
    alive = [
        pid
        for pid in children
        if psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    ]
    assert not alive, [" ".join(psutil.Process(pid).cmdline())[:200] for pid in alive]
