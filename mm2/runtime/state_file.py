"""JSON files under mm2.state.dir: read with every failure naming the file, written atomically.

A write goes to a temporary file in the same directory, is flushed to disk, and replaces the
old file in one rename (then the directory entry is flushed too): a crash leaves the old file
or the new one, never half of one. A file that cannot be read or parsed raises
StateFileError (a ConfigError: connect-mirror-maker exits 2 with its one line) and is left
exactly as it is, for the operator to look at.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, NoReturn

from mm2.errors import ConfigError

__all__ = ["StateFileError", "read_json", "write_json"]


class StateFileError(ConfigError):
    """A state file (or mm2.state.dir itself) that is unreadable, damaged or of the wrong type."""

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(
            f"{problem}; it is left as it is: fix it, or move it away to start without it",
            file=str(path),
        )


def read_json(path: Path) -> Any | None:
    """The JSON document in `path`, or None when there is no such file."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        _not_a_directory(path)
    except IsADirectoryError:
        raise StateFileError(path, "is a directory, not a file") from None
    except OSError as exc:
        raise StateFileError(path, f"cannot be read ({exc.strerror or exc})") from None
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise StateFileError(path, f"is damaged: not UTF-8 text ({exc.reason})") from None
    except json.JSONDecodeError as exc:
        raise StateFileError(
            path, f"is damaged: not JSON at line {exc.lineno} column {exc.colno} ({exc.msg})"
        ) from None


def _not_a_directory(path: Path) -> NoReturn:
    for parent in path.parents:
        if parent.exists() and not parent.is_dir():
            raise StateFileError(parent, "is not a directory; mm2.state.dir must be one")
    raise StateFileError(path, "cannot be read (a part of its path is not a directory)")


def write_json(path: Path, body: Any, *, mode: int = 0o600, indent: int | None = 1) -> None:
    """Replace `path` with `body` as JSON, atomically; the file gets `mode`."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        _not_a_directory(path)
    except OSError as exc:
        raise StateFileError(path.parent, f"cannot be made ({exc.strerror or exc})") from None
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    tmp = Path(name)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(body, out, indent=indent, sort_keys=True)
            out.flush()
            os.fsync(out.fileno())
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
