"""A stop that ends: the first SIGTERM or SIGINT stops the mirror, a second one (or a stop
still running after `timeout` seconds) ends the process at once, with one line saying so.

Two things need no Python code to run, so they work where the deadline's thread cannot (a native
call that holds the interpreter, or the interpreter's own exit, which freezes that thread):
SIGQUIT (`kill -3`, as for a JVM) writes every thread's stack to standard error, and `BACKSTOP_S`
after the deadline faulthandler's watchdog writes them too and exits with status 1.
"""

from __future__ import annotations

import contextlib
import faulthandler
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import TextIO

__all__ = ["STOP_TIMEOUT_S", "StopGuard"]

log = logging.getLogger("mm2")

# Stopping waits for tasks to end and for producers to deliver what they hold; with a cluster
# down each of those waits is bounded, but the process as a whole must end too.
STOP_TIMEOUT_S = 30.0
# How often the waiting main thread looks for a signal another thread took.
WAKE_S = 0.5
# The watchdog's deadline: this long after Python's, should that one never get to run.
BACKSTOP_S = 10


def _flush_logs() -> None:
    for handler in logging.getLogger().handlers:
        with contextlib.suppress(Exception):  # exiting anyway
            handler.flush()


def _stderr() -> TextIO | None:
    """The process's own standard error (fd 2), where faulthandler writes without Python;
    None when there is none to write to."""
    stream = sys.__stderr__
    try:
        stream.fileno()  # type: ignore[union-attr]
    except (AttributeError, OSError, ValueError):  # None, or no file descriptor
        return None
    return stream


def _watchdog(seconds: int) -> None:
    stream = _stderr()
    if stream is None:
        return  # nowhere to say why: the deadline's thread and a second signal remain
    faulthandler.dump_traceback_later(seconds, exit=True, file=stream)


class StopGuard:
    """Signal handling for a long-running command: `stopping` is set by the first signal."""

    def __init__(
        self,
        timeout: float = STOP_TIMEOUT_S,
        exit_now: Callable[[int], object] = os._exit,
        backstop: Callable[[int], object] = _watchdog,
    ) -> None:
        self.timeout = timeout
        self.stopping = threading.Event()
        self._exit = exit_now
        self._backstop = backstop
        self._armed = False
        self._lock = threading.Lock()

    def install(self) -> None:
        signal.signal(signal.SIGTERM, self.on_signal)
        signal.signal(signal.SIGINT, self.on_signal)
        if (stream := _stderr()) is not None:
            faulthandler.register(signal.SIGQUIT, file=stream, all_threads=True)

    def on_signal(self, signum: int, frame: FrameType | None = None) -> None:
        name = signal.Signals(signum).name
        if self.stopping.is_set():
            log.warning("received %s again while stopping: exiting now", name)
            _flush_logs()
            self._exit(1)
            return
        log.info("received %s, stopping (at most %.0f s)", name, self.timeout)
        self.stopping.set()
        self.arm()

    def wait(self) -> None:
        """Until the first signal. In steps: Python runs a signal's handler in the main thread
        between two bytecodes, and a signal the kernel hands to another thread (any of the
        mirror's threads may take one) only sets a flag, which a main thread blocked in an
        untimed wait would never look at: the process would miss its SIGTERM."""
        while not self.stopping.wait(WAKE_S):
            pass

    def arm(self) -> None:
        """Start the deadline (once): past it the process exits with status 1."""
        with self._lock:
            if self._armed:
                return
            self._armed = True
        self._backstop(int(self.timeout) + BACKSTOP_S)

        def deadline() -> None:
            # Left running past run()'s return: the interpreter's own exit (joining threads)
            # is part of the stop too.
            time.sleep(self.timeout)
            log.error("still stopping after %.0f s: exiting without waiting further", self.timeout)
            _flush_logs()
            self._exit(1)

        threading.Thread(target=deadline, name="stop-deadline", daemon=True).start()
