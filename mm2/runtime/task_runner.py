"""Runs one Task on its own thread: start, poll loop, pause/resume, retry with backoff, stop."""

from __future__ import annotations

import logging
import threading
import traceback
from collections.abc import Mapping
from dataclasses import dataclass

from mm2.connect.spi import Task
from mm2.errors import MM2Error
from mm2.runtime.status import State, TaskStatus

__all__ = ["Backoff", "TaskRunner"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Backoff:
    """Delays between retries of a retriable failure: initial, doubled up to maximum."""

    initial_s: float = 0.5
    maximum_s: float = 30.0


@dataclass(frozen=True)
class _Context:
    flow: str
    connector: str
    task_id: int


class TaskRunner:
    """A task and the thread that runs it; every state change is visible through status()."""

    def __init__(
        self,
        task: Task,
        config: Mapping[str, str],
        *,
        flow: str,
        connector: str,
        task_id: int,
        worker_id: str,
        paused: bool = False,
        backoff: Backoff | None = None,
    ) -> None:
        self._task = task
        self._config = dict(config)
        self._context = _Context(flow, connector, task_id)
        self._worker_id = worker_id
        self._backoff = backoff or Backoff()
        self._state: State = "UNASSIGNED"
        self._trace: str | None = None
        self._want_paused = paused
        self._stopping = threading.Event()
        self._wake = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"{flow}|{connector}-{task_id}", daemon=True
        )

    @property
    def config(self) -> dict[str, str]:
        return dict(self._config)

    @property
    def task_id(self) -> int:
        return self._context.task_id

    def status(self) -> TaskStatus:
        return TaskStatus(self._context.task_id, self._state, self._worker_id, self._trace)

    def start(self) -> None:
        self._thread.start()

    def pause(self) -> None:
        self._want_paused = True
        self._wake.set()

    def resume(self) -> None:
        self._want_paused = False
        self._wake.set()

    def stop(self, timeout: float = 60.0) -> None:
        """Ask the task to stop and wait for its thread (the task finishes its current round)."""
        self._stopping.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout)
            if self._thread.is_alive():
                log.warning("%s did not stop within %.0f s", self._thread.name, timeout)

    def _fail(self, exc: BaseException) -> None:
        # Trace first: whoever sees FAILED must also see why.
        self._trace = "".join(traceback.format_exception(exc))
        self._state = "FAILED"
        log.error("%s failed: %s", self._thread.name, exc)

    def _run(self) -> None:
        try:
            self._task.start(self._config, self._context)
        except Exception as exc:  # noqa: BLE001 - a task's failure must never take the worker down
            self._fail(exc)
            self._stop_task()
            return
        self._loop()
        self._stop_task()

    def _loop(self) -> None:
        delay = self._backoff.initial_s
        paused = False
        self._state = "RUNNING"
        while not self._stopping.is_set():
            if self._want_paused != paused:
                paused = self._want_paused
                (self._task.pause if paused else self._task.resume)()
                self._state = "PAUSED" if paused else "RUNNING"
            if paused:
                self._sleep(None)
                continue
            try:
                wait = self._task.poll()
                delay = self._backoff.initial_s
            except MM2Error as exc:
                if not exc.retriable:
                    self._fail(exc)
                    return
                log.warning("%s: %s; retrying in %.1f s", self._thread.name, exc, delay)
                wait, delay = delay, min(delay * 2, self._backoff.maximum_s)
            except Exception as exc:  # noqa: BLE001 - reported as FAILED with its trace
                self._fail(exc)
                return
            self._sleep(wait)

    def _sleep(self, seconds: float | None) -> None:
        self._wake.wait(seconds)
        self._wake.clear()

    def _stop_task(self) -> None:
        try:
            self._task.stop()
        except Exception:
            log.exception("%s: error while stopping", self._thread.name)
