"""What runs a flow's copy tasks for the planner: Spark in production, threads in a test.

The planner (mm2.connectors.epochs) starts an epoch of copy tasks, cancels it, asks how many
slots are free and how the last epoch ended; it does not know what runs them. Spark's job
(mm2.pipeline.copy_job.CopyJob) is one CopyRunner; ThreadRunner is another, for unit tests and
for reading the copy path without Spark in the way.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Protocol

from mm2.copy.failure import CopyFailure, CopyTaskFailed
from mm2.copy.positions import TaskPositions
from mm2.copy.spec import CopyTaskSpec

__all__ = ["CopyRunner", "ThreadRunner"]


class CopyRunner(Protocol):
    """Runs one epoch of copy tasks at a time."""

    @property
    def running(self) -> bool:
        """Whether an epoch is running (False once it failed or was cancelled)."""
        ...

    def start(self, specs: Sequence[CopyTaskSpec], positions: TaskPositions | None) -> None:
        """Start an epoch of len(specs) copy tasks (none may be running); a task run again
        reads where to resume from `positions`."""
        ...

    def cancel(self, timeout: float = 5.0) -> None:
        """End the running epoch now; its open transactions are aborted by the next holder."""
        ...

    def take_failure(self) -> CopyFailure | None:
        """Why the last epoch ended by itself (it never should), once; None while it runs."""
        ...

    def free_slots(self) -> int:
        """How many copy tasks could run now beside the other flows' (this flow's own count)."""
        ...


class ThreadRunner:
    """Each copy task on a thread of this process; `task` runs one until told to stop."""

    def __init__(
        self,
        task: Callable[[CopyTaskSpec, TaskPositions | None, Callable[[], bool]], None],
        *,
        slots: int = 8,
    ) -> None:
        self._task = task
        self._slots = slots
        self._threads: list[threading.Thread] = []
        self._stop = threading.Event()
        self._failure: CopyFailure | None = None
        self._lock = threading.Lock()

    @property
    def running(self) -> bool:
        """False as soon as a task failed or the epoch was cancelled (its threads may still
        be ending: start() waits for them)."""
        return not self._stop.is_set() and any(t.is_alive() for t in self._threads)

    def start(self, specs: Sequence[CopyTaskSpec], positions: TaskPositions | None) -> None:
        assert not self.running, "cancel the running epoch first"
        for thread in self._threads:  # the tasks of an epoch that failed end by themselves
            thread.join(5.0)
        self._stop = threading.Event()
        stop = self._stop
        self._failure = None

        def run(spec: CopyTaskSpec) -> None:
            try:
                self._task(spec, positions, lambda: not stop.is_set())
                if not stop.is_set():
                    self._fail(CopyFailure("error", False, "the copy tasks ended"))
            except CopyTaskFailed as exc:
                self._fail(exc.failure)
            except Exception as exc:  # noqa: BLE001 - reported typed, as Spark's job does
                self._fail(CopyFailure.of(exc))

        self._threads = [
            threading.Thread(
                target=run, args=(s,), name=f"copy-{s.settings.flow}-{s.task}", daemon=True
            )
            for s in specs
        ]
        for thread in self._threads:
            thread.start()

    def _fail(self, failure: CopyFailure) -> None:
        with self._lock:
            if self._failure is None and not self._stop.is_set():
                self._failure = failure
        self._stop.set()  # one task failed: the epoch ends, as a failed Spark job does

    def cancel(self, timeout: float = 5.0) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout)
        self._threads = []

    def take_failure(self) -> CopyFailure | None:
        with self._lock:
            failure, self._failure = self._failure, None
        return failure

    def free_slots(self) -> int:
        return self._slots
