"""How mm2's processes log: one format, one destination, repeats collapsed, user configuration.

`configure` is called once by each command. Without a configuration file every record goes to
standard error (or `--log-file`) as `time LEVEL logger: message`; Spark's own loggers
(`spark.*`, `py4j`) are quiet unless a configuration sets them. With `--log-config FILE`, the
file is Python's logging configuration: a dictConfig in JSON (`.json`) or YAML (`.yaml`,
`.yml`), or a fileConfig INI file (anything else). Either way every handler gets a
RepeatFilter.
"""

from __future__ import annotations

import json
import logging
import logging.config
import logging.handlers
import os
import sys
import threading
from pathlib import Path
from typing import Any

from mm2.errors import ConfigError
from mm2.log.collapse import RepeatFilter
from mm2.log.wire import LEVEL_ENV

__all__ = [
    "LOG_FORMAT",
    "QUIET_LOGGERS",
    "REPEAT_INTERVAL_S",
    "LogConfigError",
    "Py4JRootFilter",
    "configure",
    "load_config",
]

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
REPEAT_INTERVAL_S = 60.0
# Loggers whose records are noise to an operator unless asked for (levels a configuration
# file sets win): Spark's JVM and Python workers' raw output, and Py4J's gateway chatter.
# httpx logs every request at INFO: a standby's calls to its leader, `mm2 status --url`'s.
QUIET_LOGGERS = {
    "spark": logging.ERROR,
    "py4j": logging.CRITICAL,
    "httpx": logging.WARNING,
    "httpcore": logging.WARNING,
}


class Py4JRootFilter(logging.Filter):
    """Py4J logs its gateway's failures on the root logger (`logging.info(...)`, with a
    traceback, each time the JVM does not answer, as at every stop): judge those records by
    the level of the logger `py4j` instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name != "root" or f"{os.sep}py4j{os.sep}" not in record.pathname:
            return True
        return logging.getLogger("py4j").isEnabledFor(record.levelno)


class LogConfigError(ConfigError):
    """A --log-config file that cannot be read or applied (exit code 2, as any config error)."""


def load_config(path: Path) -> None:
    """Apply a logging configuration file (dictConfig JSON/YAML or fileConfig INI).

    Loggers that exist already (mm2's modules make theirs at import) stay enabled unless the
    file says `disable_existing_loggers: true`.
    """
    suffix = path.suffix.lower()
    try:
        if suffix in (".json", ".yaml", ".yml"):
            text = path.read_text(encoding="utf-8")
            if suffix == ".json":
                data = json.loads(text)
            else:
                import yaml

                data = yaml.safe_load(text)
            if not isinstance(data, dict):
                raise LogConfigError(f"{path}: expected a mapping (logging.config.dictConfig)")
            data.setdefault("version", 1)
            data.setdefault("disable_existing_loggers", False)
            logging.config.dictConfig(data)
        else:
            if not path.is_file():
                raise LogConfigError(f"{path}: no such file")
            logging.config.fileConfig(path, disable_existing_loggers=False)
    except LogConfigError:
        raise
    except OSError as exc:
        raise LogConfigError(f"{path}: {exc.strerror or exc}") from None
    except Exception as exc:  # noqa: BLE001 - json, yaml, configparser and logging all differ
        raise LogConfigError(f"{path}: {type(exc).__name__}: {exc}") from None


def _log_thread_exception(args: threading.ExceptHookArgs) -> None:
    if args.exc_type is SystemExit or args.exc_value is None:
        return
    name = args.thread.name if args.thread is not None else "a thread"
    logging.getLogger("mm2").error("uncaught exception in %s", name, exc_info=args.exc_value)


def _handlers() -> list[logging.Handler]:
    seen: dict[int, logging.Handler] = {}
    loggers: list[Any] = [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]
    for logger in loggers:
        for handler in getattr(logger, "handlers", []):
            seen.setdefault(id(handler), handler)
    return list(seen.values())


def configure(
    *,
    level: int = logging.INFO,
    log_config: Path | str | None = None,
    log_file: Path | str | None = None,
    repeat_interval: float = REPEAT_INTERVAL_S,
) -> None:
    """Set up this process's logging (see the module's doc). `level` is the root's level
    without a configuration file; with one, the file's levels stand unless `level` is DEBUG
    (`--debug`)."""
    if log_config is not None:
        load_config(Path(log_config))
        if level <= logging.DEBUG:
            logging.getLogger().setLevel(level)
    else:
        handler: logging.Handler
        if log_file is not None:
            # Reopened when moved away, so logrotate needs no copytruncate.
            handler = logging.handlers.WatchedFileHandler(log_file, encoding="utf-8")
        else:
            handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter(LOG_FORMAT))
        root = logging.getLogger()
        for old in list(root.handlers):
            root.removeHandler(old)
            old.close()
        root.addHandler(handler)
        root.setLevel(level)
    for name, quiet in QUIET_LOGGERS.items():
        logger = logging.getLogger(name)
        if logger.level == logging.NOTSET:
            logger.setLevel(quiet)
    # Python's warnings and a thread's uncaught exception come out in the same format too.
    logging.captureWarnings(True)
    threading.excepthook = _log_thread_exception
    for handler in _handlers():
        if not any(isinstance(f, Py4JRootFilter) for f in handler.filters):
            handler.addFilter(Py4JRootFilter())
        RepeatFilter.attach(handler, repeat_interval)
    # Spark's Python workers log at the root's level (mm2.log.wire.configure_child).
    os.environ[LEVEL_ENV] = logging.getLevelName(logging.getLogger().getEffectiveLevel())
