"""Repeated warnings and errors collapsed into one line per cause per interval, with a count.

An unreachable cluster makes every Kafka client of the process report the same refused
connection several times a second. A RepeatFilter on a handler lets the first record of a
cause through, holds back the repeats for `interval` seconds, and then writes the last of them
once with how many there were: under a steady stream, one line per cause per interval.

>>> import logging, io
>>> stream = io.StringIO()
>>> handler = logging.StreamHandler(stream)
>>> repeats = RepeatFilter.attach(handler, interval=60.0)
>>> log = logging.getLogger("doctest.collapse")
>>> log.addHandler(handler)
>>> for attempt in range(5):
...     log.error("Connect to 127.0.0.1:9092 failed after %d ms", attempt)
>>> stream.getvalue()
'Connect to 127.0.0.1:9092 failed after 0 ms\\n'
>>> repeats.flush(force=True)
>>> stream.getvalue().splitlines()[-1]
'Connect to 127.0.0.1:9092 failed after 4 ms (4 more like this in the last 0 s)'
"""

from __future__ import annotations

import copy
import logging
import re
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["CAUSE_ATTRIBUTE", "RepeatFilter", "blank_numbers", "cause_of"]

# A record may name its cause itself (mm2.kafka.failure does for librdkafka's lines); the
# cause of any other record is its text with the numbers that vary between repeats blanked.
CAUSE_ATTRIBUTE = "mm2_cause"
_SUMMARY_ATTRIBUTE = "mm2_repeats"
# host:port and dotted addresses stay as they are (a different broker is a different cause);
# any other number (a duration, a count, an attempt, a task) does not make a new cause.
_NUMBERS = re.compile(r"(?P<keep>[\w.-]+:\d+|\d+(?:\.\d+){3})|\d+(?:\.\d+)?")


def _blank(match: re.Match[str]) -> str:
    return match.group("keep") or "#"


def blank_numbers(text: str) -> str:
    """`text` with every number but those of addresses (host:port, a.b.c.d) as `#`."""
    return _NUMBERS.sub(_blank, text)


def cause_of(record: logging.LogRecord) -> tuple[str, int, str]:
    """What makes two records repeats of each other: logger, level and cause."""
    named = getattr(record, CAUSE_ATTRIBUTE, None)
    if isinstance(named, str):
        text = named
    else:
        try:
            text = blank_numbers(record.getMessage())
        except Exception:  # noqa: BLE001 - a broken format is the handler's to report
            text = str(record.msg)
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            text += f" | {type(exc).__name__}: {blank_numbers(str(exc))}"
    return record.name, record.levelno, text


@dataclass
class _Window:
    opened: float
    held: int = 0
    last: logging.LogRecord | None = None


class RepeatFilter(logging.Filter):
    """A handler's filter: the first record of a cause passes, its repeats within `interval`
    seconds are counted and written once when the interval ends. Records below `level` pass.

    Each handler needs its own RepeatFilter (`attach`), which writes its summaries to that
    handler from a background thread, also when the repeats have stopped.
    """

    def __init__(
        self,
        interval: float = 60.0,
        *,
        level: int = logging.WARNING,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        self.interval = interval
        self.level = level
        self._clock = clock
        self._lock = threading.Lock()
        self._windows: dict[tuple[str, int, str], _Window] = {}
        self._handler: logging.Handler | None = None

    @classmethod
    def attach(
        cls, handler: logging.Handler, interval: float = 60.0, *, level: int = logging.WARNING
    ) -> RepeatFilter:
        """Add a RepeatFilter to `handler` (once: an existing one is returned) and have its
        summaries flushed in the background."""
        for existing in handler.filters:
            if isinstance(existing, RepeatFilter):
                return existing
        repeats = cls(interval, level=level)
        repeats._handler = handler
        handler.addFilter(repeats)
        _flusher.register(repeats)
        return repeats

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < self.level or hasattr(record, _SUMMARY_ATTRIBUTE):
            return True
        key = cause_of(record)
        now = self._clock()
        with self._lock:
            window = self._windows.get(key)
            if window is None or (now - window.opened >= self.interval and not window.held):
                self._windows[key] = _Window(now)
                return True
            window.held += 1
            window.last = record
        return False

    def flush(self, *, force: bool = False) -> None:
        """Write a summary for every interval that has ended (all of them with `force`)."""
        now = self._clock()
        due: list[tuple[logging.LogRecord, int, float]] = []
        with self._lock:
            for key, window in list(self._windows.items()):
                elapsed = now - window.opened
                if not force and elapsed < self.interval:
                    continue
                if window.held and window.last is not None:
                    due.append((window.last, window.held, elapsed))
                    # The repeats go on: the next interval starts now, holding them back again.
                    self._windows[key] = _Window(now)
                else:
                    del self._windows[key]
        handler = self._handler
        stream = getattr(handler, "stream", None)
        if handler is None or getattr(stream, "closed", False):
            return  # a handler closed since (reconfigured away): nowhere to write
        for last, held, elapsed in due:
            handler.handle(_summary(last, held, elapsed))


def _summary(last: logging.LogRecord, held: int, elapsed: float) -> logging.LogRecord:
    record = copy.copy(last)
    record.msg = f"{last.getMessage()} ({held} more like this in the last {elapsed:.0f} s)"
    record.args = None
    # Written now, so stamped now: the log stays in time order (the text is the last repeat's).
    now = time.time()
    record.created, record.msecs = now, (now - int(now)) * 1000
    # The traceback was shown with the first record of the cause; the count is what is new.
    record.exc_info = None
    record.exc_text = None
    setattr(record, _SUMMARY_ATTRIBUTE, held)
    return record


class _Flusher:
    """One daemon thread that flushes every live RepeatFilter each second."""

    def __init__(self) -> None:
        self._filters: weakref.WeakSet[RepeatFilter] = weakref.WeakSet()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def register(self, repeats: RepeatFilter) -> None:
        with self._lock:
            self._filters.add(repeats)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="log-repeats", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            time.sleep(1.0)
            with self._lock:
                filters = list(self._filters)
            for repeats in filters:
                try:
                    repeats.flush()
                except Exception:  # noqa: BLE001, S112 - logging must never kill its own thread
                    continue


_flusher = _Flusher()
