"""A flow's copy tasks as one long-running Spark job per epoch (see docs/architecture.md).

The driver starts an epoch with one Spark task per copy task; each runs mm2.copy.task inside its
Python worker until the driver cancels the job's group (assignment changed, pause, stop) or it
fails. Record bytes never enter the JVM, and nothing but a line per task comes back; a failure
comes back typed (mm2.copy.failure).
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
import weakref
from collections.abc import Iterator, Sequence

from py4j.protocol import Py4JError
from pyspark import SparkContext, TaskContext

from mm2.copy.failure import CopyFailure, CopyTaskFailed
from mm2.copy.positions import TaskPositions
from mm2.copy.spec import CopyTaskSpec
from mm2.copy.task import run_copy_task

__all__ = ["CopyJob", "free_slots", "task_slots"]

log = logging.getLogger(__name__)

_epochs = itertools.count(1)
_jobs: set[CopyJob] = set()
_jobs_lock = threading.Lock()


# How long a fenced copy task waits for Spark to kill it before it fails its job.
_KILL_WAIT_S = 10.0


def _run_tasks(specs: list[str], positions: TaskPositions | None) -> object:
    def run(index: int, _rows: Iterator[int]) -> Iterator[str]:
        spec = CopyTaskSpec.from_json(specs[index])
        context = TaskContext.get()
        attempt = 0 if context is None else context.attemptNumber()
        try:
            run_copy_task(spec, attempt=attempt, positions=positions)
        except CopyTaskFailed as exc:
            if exc.failure.kind != "fenced":
                raise
            # Fenced on purpose, mostly: a restart or a new epoch cancels this one, then fences
            # its ids; Spark kills this worker in a moment. Said once, at INFO, instead of the
            # executor's ERROR and two stack traces. A fencing nobody follows with a kill (a
            # holder in another process) fails the job after the wait, as any failure does.
            log.info(
                "%s task %d: fenced by a newer holder of %s (a restart or a new copy "
                "epoch): it ends",
                spec.settings.flow,
                spec.task,
                spec.transactional_id,
            )
            time.sleep(_KILL_WAIT_S)
            raise
        yield f"{spec.settings.flow} task {spec.task} ended"

    return run


class CopyJob:
    """One flow's epochs, one at a time: start, cancel, and how the last one ended."""

    def __init__(self, context: SparkContext, flow: str) -> None:
        self._sc = context
        self._flow = flow
        self._thread: threading.Thread | None = None
        self._group = ""
        self._cancelled = False
        self._failure: CopyFailure | None = None
        self.tasks = 0

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def take_failure(self) -> CopyFailure | None:
        """Why the last epoch ended by itself (it never should), once; None while it runs."""
        if self.running:
            return None
        failure, self._failure = self._failure, None
        return failure

    def start(self, specs: Sequence[CopyTaskSpec], positions: TaskPositions | None = None) -> None:
        """Start an epoch of len(specs) copy tasks (the previous one must be cancelled);
        a task Spark runs again reads where to resume from `positions`."""
        assert not self.running, "cancel the running epoch first"
        epoch = next(_epochs)
        self._group = f"mm2-copy-{self._flow}-{epoch}"
        self._cancelled = False
        self._failure = None
        self.tasks = len(specs)
        payload = [s.to_json() for s in specs]
        group = self._group

        def body() -> None:
            self._sc.setJobGroup(group, f"mm2 {self._flow} copy tasks", interruptOnCancel=True)
            try:
                rdd = self._sc.parallelize(range(len(payload)), len(payload))
                tasks = _run_tasks(payload, positions)
                rdd.mapPartitionsWithIndex(tasks).collect()  # type: ignore[arg-type]
                self._failure = CopyFailure("error", False, "the copy tasks ended")
            except Exception as exc:  # noqa: BLE001 - Py4J errors carry the task's failure
                if not self._cancelled:
                    self._failure = CopyFailure.of_spark(str(exc))

        self._thread = threading.Thread(target=body, name=f"{self._flow}|copy-epoch-{epoch}")
        self._thread.daemon = True
        with _jobs_lock:
            _jobs.add(self)
        self._thread.start()
        log.info("%s: copy epoch %d started with %d task(s)", self._flow, epoch, len(specs))

    def free_slots(self) -> int:
        """Task slots not held by the other flows' running copy tasks."""
        return free_slots(self._sc, self)

    def cancel(self, timeout: float = 5.0) -> None:
        """End the running epoch now; open transactions are aborted by the next holder."""
        thread = self._thread
        if thread is None:
            return
        self._cancelled = True
        if thread.is_alive():
            self._sc.cancelJobGroup(self._group)
            thread.join(timeout)
            if thread.is_alive():
                log.warning("%s: copy epoch still ending after %.0f s", self._flow, timeout)
        self._thread = None
        self.tasks = 0
        with _jobs_lock:
            _jobs.discard(self)


# Every flow's planner asks for the free slots at each poll (twice a second): four calls
# into the JVM each time, most of twelve idle flows' planner CPU. The answer is kept this long.
_SLOTS_KEPT_S = 1.0
_slots_seen: weakref.WeakKeyDictionary[SparkContext, tuple[float, int]] = (
    weakref.WeakKeyDictionary()
)  # (when asked, slots)
_slots_lock = threading.Lock()


def task_slots(context: SparkContext) -> int:
    """How many tasks Spark can run at once now: the cores of the executors alive at this moment
    (in local mode, its threads), as Spark said at most _SLOTS_KEPT_S ago. defaultParallelism
    is no guide on a cluster: it never falls below 2, so a flow with two copy tasks on two
    one-core workers would never learn that one worker is gone, and the copy task Spark runs
    again would wait for a core forever."""
    now = time.monotonic()
    with _slots_lock:
        asked, slots = _slots_seen.get(context, (float("-inf"), 0))
        if now - asked < _SLOTS_KEPT_S:
            return slots
        try:
            scheduler = context._jsc.sc()
            profile = scheduler.resourceProfileManager().defaultResourceProfile()
            slots = int(scheduler.maxNumConcurrentTasks(profile))
        except Py4JError as exc:  # a Spark without this (internal) call: the coarse figure
            log.debug("task slots from defaultParallelism: %s", exc)
            slots = int(context.defaultParallelism)
        _slots_seen[context] = (now, slots)
        return slots


def free_slots(context: SparkContext, asking: CopyJob) -> int:
    """Task slots not held by the other flows' running copy tasks."""
    with _jobs_lock:
        held = sum(j.tasks for j in _jobs if j is not asking and j.running)
    return max(0, task_slots(context) - held)
