"""The stop is bounded: a second signal, or a stop still running after the deadline, exits."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from pathlib import Path

from mm2.cli.shutdown import StopGuard


def test_first_signal_stops_second_exits_at_once() -> None:
    exits: list[int] = []
    watchdogs: list[int] = []
    guard = StopGuard(timeout=3600, exit_now=exits.append, backstop=watchdogs.append)
    guard.on_signal(signal.SIGTERM)
    assert guard.stopping.is_set() and exits == []
    # The watchdog ends the process 10 s after the deadline, should Python not get to.
    assert watchdogs == [3610]
    guard.on_signal(signal.SIGINT)
    assert exits == [1]


def test_a_stop_that_hangs_is_ended_after_the_deadline() -> None:
    exited = threading.Event()
    codes: list[int] = []

    def exit_now(code: int) -> None:
        codes.append(code)
        exited.set()

    guard = StopGuard(timeout=0.2, exit_now=exit_now, backstop=lambda seconds: None)
    guard.on_signal(signal.SIGTERM)
    assert exited.wait(30), "the deadline never fired"
    assert codes == [1]


def _run(script: Path, text: str) -> subprocess.CompletedProcess[str]:
    """`text` run as a Python script of its own, its output kept."""
    script.write_text(text, encoding="utf-8")
    return subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=100, check=False
    )


def test_a_stop_where_python_cannot_run_is_ended_with_every_threads_stack(tmp_path: Path) -> None:
    """A child whose stop is stuck in native code with the interpreter held (here: a C sleep
    that never lets go of the GIL) is ended by the watchdog, which says where it was stuck."""
    done = _run(
        tmp_path / "stuck.py",
        "import ctypes, os, signal\n"
        "from mm2.cli import shutdown\n"
        "shutdown.BACKSTOP_S = 1\n"
        "guard = shutdown.StopGuard(timeout=1)\n"
        "guard.install()\n"
        "os.kill(os.getpid(), signal.SIGTERM)\n"
        "print('stopping', flush=True)\n"
        "ctypes.PyDLL(None).sleep(120)  # PyDLL: the GIL stays held\n",
    )
    assert "stopping" in done.stdout
    assert done.returncode == 1, done.stderr
    assert "Timeout (0:00:02)!" in done.stderr and "stuck.py" in done.stderr, done.stderr


def test_sigquit_writes_every_threads_stack_and_goes_on(tmp_path: Path) -> None:
    done = _run(
        tmp_path / "quit.py",
        "import os, signal, time\n"
        "from mm2.cli.shutdown import StopGuard\n"
        "StopGuard().install()\n"
        "os.kill(os.getpid(), signal.SIGQUIT)\n"
        "time.sleep(0.5)\n"
        "print('still here', flush=True)\n",
    )
    assert done.returncode == 0 and "still here" in done.stdout, done.stderr
    assert "Current thread" in done.stderr and "quit.py" in done.stderr, done.stderr


def test_a_signal_another_thread_takes_still_stops_the_wait(tmp_path: Path) -> None:
    """The kernel hands a process's SIGTERM to any thread that does not block it; here the main
    thread blocks it, so a helper thread takes it, as one of the mirror's many threads may.
    An untimed wait in the main thread would never see it."""
    done = _run(
        tmp_path / "other_thread.py",
        "import os, signal, threading, time\n"
        "from mm2.cli.shutdown import StopGuard\n"
        "guard = StopGuard()\n"
        "guard.install()\n"
        "threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n"
        "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})\n"
        "os.kill(os.getpid(), signal.SIGTERM)\n"
        "guard.wait()\n"
        "print('stopped', flush=True)\n"
        "os._exit(0)\n",
    )
    assert done.returncode == 0 and "stopped" in done.stdout, done.stderr
