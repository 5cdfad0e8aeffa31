"""Log lines of child processes (Spark's JVM, Spark's Python workers) into this process's log.

A child writes each record as one JSON line on its standard error (`{"mm2log": 1, ...}`):
Python workers with WireFormatter (`configure_child`), the JVM with the log4j2 layout in
mm2/pipeline/log4j2.properties. The parent reads the child's output with `pump` and logs each
record again through its own logging, so one configuration (format, file, levels, repeats)
covers all of them. Anything else the child prints (the JVM's own warnings, a Python
traceback written straight to stderr) is logged line by line as `spark.stderr` at WARNING.

>>> line = WireFormatter().format(logging.makeLogRecord({"name": "mm2.x", "msg": "hi"}))
>>> parse(line)["name"], parse(line)["msg"]
('mm2.x', 'hi')
>>> parse("WARNING: Using incubator modules") is None
True
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
from collections.abc import Iterable
from typing import IO, Any

__all__ = [
    "LEVEL_ENV",
    "RAW_LOGGER",
    "WIRE_ENV",
    "WireFormatter",
    "configure_child",
    "demote_spark_records",
    "parse",
    "pump",
    "relog",
]

# Set in the parent's environment before the JVM starts; Spark's local Python workers inherit
# it. Executors on a cluster do not have it, and log in the plain format to their own stderr.
WIRE_ENV = "MM2_LOG_WIRE"
LEVEL_ENV = "MM2_LOG_LEVEL"
RAW_LOGGER = "spark.stderr"
_KEY = "mm2log"
_LEVELS = {
    "TRACE": logging.DEBUG,
    "DEBUG": logging.DEBUG,
    "INFO": logging.INFO,
    "WARN": logging.WARNING,
    "WARNING": logging.WARNING,
    "ERROR": logging.ERROR,
    "FATAL": logging.CRITICAL,
    "CRITICAL": logging.CRITICAL,
}


class WireFormatter(logging.Formatter):
    """One JSON line per record, with its traceback inside."""

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        fields: dict[str, Any] = {
            _KEY: 1,
            "ms": int(record.created * 1000),
            "level": record.levelname,
            "name": record.name,
            "msg": message,
            "exc": record.exc_text or "",
            "pid": record.process,
        }
        return json.dumps(fields, ensure_ascii=False)


def configure_child() -> bool:
    """In a Spark Python worker started by mm2: every record as a wire line on stderr, at the
    parent's level. False (nothing changed) when the parent did not ask for it."""
    if os.environ.get(WIRE_ENV) != "1":
        return False
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(WireFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(os.environ.get(LEVEL_ENV, "INFO"))
    return True


def parse(line: str) -> dict[str, Any] | None:
    """The fields of a wire line, or None for any other line."""
    text = line.strip()
    if not text.startswith("{") or f'"{_KEY}"' not in text:
        return None
    try:
        fields = json.loads(text)
    except ValueError:
        return None
    if not isinstance(fields, dict) or fields.get(_KEY) != 1:
        return None
    return fields


# Set once the process stops: Spark's records are then logged at DEBUG at most.
_STOPPING = threading.Event()


def demote_spark_records() -> None:
    """From now on (the mirror is stopping) log Spark's own records at DEBUG at most. Its tasks
    are cancelled under it, and it reports that as errors with a stack trace (a broadcast block
    already removed, an interrupted read) that say nothing an operator can act on. The
    mirror's records, the copy tasks' included, keep their levels."""
    _STOPPING.set()


def relog(line: str) -> None:
    """Log one line of a child's output in this process."""
    fields = parse(line)
    if fields is None:
        text = line.rstrip("\r\n")
        if text.strip():
            level = logging.DEBUG if _STOPPING.is_set() else logging.WARNING
            logging.getLogger(RAW_LOGGER).log(level, "%s", text)
        return
    name = str(fields.get("name") or RAW_LOGGER)
    level = _LEVELS.get(str(fields.get("level", "INFO")).upper(), logging.INFO)
    if _STOPPING.is_set() and name.startswith("spark."):
        level = min(level, logging.DEBUG)
    logger = logging.getLogger(name)
    if not logger.isEnabledFor(level):
        return
    message = str(fields.get("msg", ""))
    exc = str(fields.get("exc") or "").rstrip()
    if exc:
        message = f"{message}\n{exc}"
    # makeRecord, not makeLogRecord: the record factory (which redacts secrets) sees the text.
    record = logger.makeRecord(name, level, "(child)", 0, message, (), None)
    millis = fields.get("ms")
    if isinstance(millis, int | float):
        record.created = millis / 1000
        record.msecs = millis % 1000
    pid = fields.get("pid")
    if isinstance(pid, int):
        record.process = pid
    logger.handle(record)


def pump(stream: IO[bytes] | Iterable[bytes]) -> None:
    """Log every line of `stream` (a child's stdout or stderr) until it ends."""
    for raw in stream:
        try:
            relog(raw.decode("utf-8", errors="replace"))
        except Exception:  # noqa: BLE001, S112 - the pump must outlive any one line
            continue
