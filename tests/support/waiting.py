"""One way to wait in tests: `eventually`, which polls a check until it holds or a deadline
passes. Deadlines are generous bounds for a shared two-core machine, never a measurement."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

_FIRST_PAUSE = 0.01  # seconds; pauses double from here up to `interval`
_LOG_LINES = 60


def eventually(
    check: Callable[[], T | None],
    *,
    timeout: float,
    what: str,
    interval: float = 0.25,
    log: Callable[[], str] | None = None,
) -> T:
    """Call `check` until it returns something truthy and return that.

    An exception from `check` counts as "not yet" (a leader not elected yet, a topic not
    created yet). Pauses start at 10 ms and double up to `interval`, so a cheap in-process
    check answers at once and a check that talks to a broker does not hammer it. After
    `timeout` seconds it raises AssertionError naming `what` and the last value or exception,
    with the tail of `log()` (a mirror's output) when given.
    """
    deadline = time.monotonic() + timeout
    pause = min(_FIRST_PAUSE, interval)
    while True:
        error: Exception | None = None
        try:
            result = check()
        except Exception as exc:
            error, result = exc, None
        if result:
            return result
        if time.monotonic() > deadline:
            last = f"last raised {error!r}" if error is not None else f"last returned {result!r}"
            message = f"timed out after {timeout:g} s waiting for {what} ({last})"
            if log is not None:
                message += f"; log tail:\n{_tail(log())}"
            raise AssertionError(message) from error
        time.sleep(pause)
        pause = min(pause * 2, interval)


def _tail(text: str) -> str:
    """The last lines of a log, without Java stack frames (`at ...`)."""
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("at ")]
    return "\n".join(lines[-_LOG_LINES:])


def file_text(path: Path) -> Callable[[], str]:
    """`log=` for a process that writes its log to `path` (empty until the file exists)."""
    return lambda: path.read_text(errors="replace") if path.exists() else ""
