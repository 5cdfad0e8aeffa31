"""Undo what mm2.log.configure() does to the test process's logging: its filters on every
handler (pytest's own capture handlers included), the levels it set, the handlers it made."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from mm2.log.collapse import RepeatFilter
from mm2.log.setup import QUIET_LOGGERS, Py4JRootFilter


def _loggers() -> list[Any]:
    return [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]


@contextmanager
def logging_restored() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    levels = {name: logging.getLogger(name).level for name in QUIET_LOGGERS}
    hook = threading.excepthook
    logging.captureWarnings(False)  # pytest restores showwarning after each test, not logging
    try:
        yield
    finally:
        threading.excepthook = hook
        logging.captureWarnings(False)
        for handler in list(root.handlers):
            root.removeHandler(handler)
            if handler not in handlers:
                handler.close()
        for handler in handlers:
            root.addHandler(handler)
        root.setLevel(level)
        for name, old in levels.items():
            logging.getLogger(name).setLevel(old)
        for logger in _loggers():
            for handler in getattr(logger, "handlers", []):
                for added in [
                    f for f in handler.filters if isinstance(f, RepeatFilter | Py4JRootFilter)
                ]:
                    handler.removeFilter(added)
