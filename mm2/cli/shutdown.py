"""A stop that ends: the first SIGTERM or SIGINT stops the mirror, a second one (or a stop
still running after `timeout` seconds) ends the process at once, with one line saying so."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from types import FrameType

__all__ = ["STOP_TIMEOUT_S", "StopGuard"]

log = logging.getLogger("mm2")

# Stopping waits for tasks to end and for producers to deliver what they hold; with a cluster
# down each of those waits is bounded, but the process as a whole must end too.
STOP_TIMEOUT_S = 30.0


def _flush_logs() -> None:
    for handler in logging.getLogger().handlers:
        with contextlib.suppress(Exception):  # exiting anyway
            handler.flush()


class StopGuard:
    """Signal handling for a long-running command: `stopping` is set by the first signal."""

    def __init__(
        self, timeout: float = STOP_TIMEOUT_S, exit_now: Callable[[int], object] = os._exit
    ) -> None:
        self.timeout = timeout
        self.stopping = threading.Event()
        self._exit = exit_now
        self._armed = False
        self._lock = threading.Lock()

    def install(self) -> None:
        signal.signal(signal.SIGTERM, self.on_signal)
        signal.signal(signal.SIGINT, self.on_signal)

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

    def arm(self) -> None:
        """Start the deadline (once): past it the process exits with status 1."""
        with self._lock:
            if self._armed:
                return
            self._armed = True

        def deadline() -> None:
            # Left running past run()'s return: the interpreter's own exit (joining threads)
            # is part of the stop too.
            time.sleep(self.timeout)
            log.error("still stopping after %.0f s: exiting without waiting further", self.timeout)
            _flush_logs()
            self._exit(1)

        threading.Thread(target=deadline, name="stop-deadline", daemon=True).start()
