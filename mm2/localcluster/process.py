"""JVM child processes that never outlive us (own process group, parent-death signal, atexit),
and the directory a local service runs in."""

from __future__ import annotations

import abc
import atexit
import contextlib
import ctypes
import ctypes.util
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Self

from mm2.errors import ClusterError

__all__ = ["Service", "WorkDir", "read_from", "read_tail", "spawn", "terminate"]

_PR_SET_PDEATHSIG = 1
_live: set[subprocess.Popen[bytes]] = set()
_lock = threading.Lock()


class Service(abc.ABC):
    """Something started and stopped (a broker, a KDC, a registry); `with` starts it and stops
    it at the end."""

    @abc.abstractmethod
    def start(self) -> Self: ...

    @abc.abstractmethod
    def stop(self) -> None: ...

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


class WorkDir:
    """A service's directory: the one given, or a temporary one that `make` creates and
    `remove` deletes (a given directory is kept)."""

    def __init__(self, given: Path | str | None, prefix: str) -> None:
        self._own = given is None
        self._prefix = prefix
        self._path = None if given is None else Path(given).resolve()

    def path(self, not_started: ClusterError) -> Path:
        """The directory; raises `not_started` before `make` when none was given."""
        if self._path is None:
            raise not_started
        return self._path

    def make(self) -> Path:
        """The directory, a new temporary one the first time when none was given."""
        if self._path is None:
            self._path = Path(tempfile.mkdtemp(prefix=self._prefix))
        return self._path

    def remove(self) -> None:
        """Delete the directory if it is a temporary one made here."""
        if self._own and self._path is not None:
            shutil.rmtree(self._path, ignore_errors=True)


def _pdeathsig_hook() -> Callable[[], None] | None:
    """A preexec_fn asking Linux to SIGKILL the child when its parent dies (None elsewhere)."""
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    prctl = libc.prctl  # looked up here: the child after fork only makes the call

    def hook() -> None:
        prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)

    return hook


def spawn(
    command: Sequence[str], *, log: Path, cwd: Path, env: Mapping[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """Start `command` in its own process group with stdout+stderr appended to `log` (and the
    environment `env`, else ours).

    The parent-death signal fires when the *thread* that forked exits, so call this from a
    thread that lives as long as the child (the main thread, in practice).
    """
    with log.open("ab") as out:
        process = subprocess.Popen(
            list(command),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env=None if env is None else dict(env),
            start_new_session=True,
            preexec_fn=_pdeathsig_hook(),  # only calls prctl: safe after fork
        )
    with _lock:
        _live.add(process)
    return process


def _signal_group(process: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, sig)


def _exited(process: subprocess.Popen[bytes], timeout: float) -> bool:
    """Wait for the exit without reaping, so the group id cannot be reused under us."""
    deadline = time.monotonic() + timeout
    while True:
        if process.returncode is not None:
            return True
        try:
            info = os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return True
        if info is not None:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


def terminate(processes: Sequence[subprocess.Popen[bytes]], *, grace: float = 15.0) -> int:
    """SIGTERM each process group, SIGKILL what is left after `grace` seconds, reap them all;
    how many had not exited within `grace` (killed, not stopped)."""
    running = [p for p in processes if p.returncode is None]
    for process in running:
        _signal_group(process, signal.SIGTERM)
    deadline = time.monotonic() + grace
    late = 0
    for process in running:
        late += not _exited(process, max(0.0, deadline - time.monotonic()))
        # The leader is dead (a zombie, so its group id is still ours) or late: kill the group.
        _signal_group(process, signal.SIGKILL)
    for process in processes:
        process.wait()
        with _lock:
            _live.discard(process)
    return late


@atexit.register
def _kill_leftovers() -> None:
    with _lock:
        leftovers = list(_live)
    for process in leftovers:
        _signal_group(process, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=5)


def read_tail(path: Path, lines: int = 20) -> str:
    """The last `lines` lines of a text file ('' when it does not exist)."""
    try:
        with path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - 64 * 1024))
            data = handle.read()
    except FileNotFoundError:
        return ""
    text = data.decode("utf-8", errors="replace")
    return "\n".join(text.splitlines()[-lines:])


def read_from(path: Path, offset: int) -> str:
    """The text of `path` from byte `offset` ("" when it does not exist)."""
    try:
        with path.open("rb") as handle:
            handle.seek(offset)
            return handle.read().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return ""
