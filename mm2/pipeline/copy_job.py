"""A flow's copy tasks as one long-running Spark job per epoch (see docs/architecture.md).

The driver starts an epoch with one Spark task per copy task; each runs mm2.kafka.stream_copier
inside its Python worker until the driver cancels the job's group (assignment changed, pause,
stop) or it fails. Record bytes never enter the JVM, and nothing but a line per task comes back.

Every copy task, once its producer has fenced the earlier holders of its transactional id,
reads the committed positions and starts after them: whatever an earlier attempt (Spark runs a
task again when its executor is lost), a zombie, or a deposed leader's planner committed since
the driver read the positions is never copied twice.
"""

from __future__ import annotations

import itertools
import logging
import re
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from py4j.protocol import Py4JError
from pyspark import SparkContext, TaskContext

from mm2.kafka.offset_store import OffsetTail, SourcePositions
from mm2.kafka.stream_copier import CopyTaskSpec, StreamCopier

__all__ = ["CopyJob", "PositionsTopic", "free_slots", "python_error", "task_slots"]

log = logging.getLogger(__name__)

_epochs = itertools.count(1)
_jobs: set[CopyJob] = set()
_jobs_lock = threading.Lock()
_ERROR_LINE = re.compile(r"^(?:[\w.]+\.)?(\w+(?:Error|Exception)): (.+)$")


def python_error(text: str) -> tuple[str, str] | None:
    """(class name, message) of the last Python exception a failed Spark job reports."""
    found = None
    for line in text.splitlines():
        match = _ERROR_LINE.match(line.strip())
        if match and match.group(1) not in ("Py4JJavaError", "SparkException"):
            found = (match.group(1), match.group(2))
    return found


@dataclass(frozen=True)
class PositionsTopic:
    """Where a flow's positions are committed (Connect's offsets topic on the target), in plain
    values an executor can unpickle with nothing but mm2.kafka."""

    consumer: dict[str, str]
    admin: dict[str, str]
    topic: str
    connector: str
    cluster: str

    def read(self, timeout: float = 60.0) -> dict[tuple[str, int], int]:
        """The last offset copied of each source partition, as committed now."""
        tail = OffsetTail(
            self.consumer, self.admin, self.topic, connector=self.connector, cluster=self.cluster
        )
        try:
            positions = SourcePositions()
            positions.apply(tail.read_to_end(timeout))
            return positions.offsets
        finally:
            tail.close()


def _partitions(spec: CopyTaskSpec, shown: int = 6) -> str:
    names = [f"{a.topic}-{a.partition}" for a in spec.partitions]
    if len(names) <= shown:
        return ", ".join(names)
    return f"{', '.join(names[:shown])} and {len(names) - shown} more partitions"


def _run_tasks(specs: list[str], positions: PositionsTopic | None) -> object:
    def run(index: int, _rows: Iterator[int]) -> Iterator[str]:
        spec = CopyTaskSpec.from_json(specs[index])
        context = TaskContext.get()
        attempt = 0 if context is None else context.attemptNumber()
        began = time.monotonic()
        copier = StreamCopier(spec)  # its producer has now fenced every earlier holder of its id
        if attempt > 0:  # the partitions the planner added while the first attempt ran
            taken = copier.catch_up_assignment()
            if taken:
                log.info("%s task %d (attempt %d): also takes %d partition(s) added since the "
                         "epoch began", spec.flow, spec.task, attempt, len(taken))  # fmt: skip
        if positions is not None and spec.transactional_id:
            moved = copier.resume_from(positions.read())
            if moved:
                log.warning(
                    "%s task %d (attempt %d): positions committed since the epoch began; "
                    "resumes from the committed positions (%s)",
                    spec.flow, spec.task, attempt, ", ".join(moved),
                )  # fmt: skip
        log.info(
            "%s task %d: copying %s (ready in %.1f s)",
            spec.flow, spec.task, _partitions(spec), time.monotonic() - began,
        )  # fmt: skip
        try:
            copier.run()
        finally:
            copier.close()
        yield f"{spec.flow} task {spec.task} ended"

    return run


class CopyJob:
    """One flow's epochs, one at a time: start, cancel, and how the last one ended."""

    def __init__(self, context: SparkContext, flow: str) -> None:
        self._sc = context
        self._flow = flow
        self._thread: threading.Thread | None = None
        self._group = ""
        self._cancelled = False
        self._failure: str | None = None
        self.tasks = 0

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def take_failure(self) -> str | None:
        """Why the last epoch ended by itself (it never should), once; None while it runs."""
        if self.running:
            return None
        failure, self._failure = self._failure, None
        return failure

    def start(self, specs: Sequence[CopyTaskSpec], positions: PositionsTopic | None = None) -> None:
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
                self._failure = "the copy tasks ended"
            except Exception as exc:  # noqa: BLE001 - Py4J errors carry the task's traceback
                if not self._cancelled:
                    self._failure = str(exc)

        self._thread = threading.Thread(target=body, name=f"{self._flow}|copy-epoch-{epoch}")
        self._thread.daemon = True
        with _jobs_lock:
            _jobs.add(self)
        self._thread.start()
        log.info("%s: copy epoch %d started with %d task(s)", self._flow, epoch, len(specs))

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


def task_slots(context: SparkContext) -> int:
    """How many tasks Spark can run at once now: the cores of the executors alive at this moment
    (in local mode, its threads). defaultParallelism is no guide on a cluster: it never falls
    below 2, so a flow with two copy tasks on two one-core workers would never learn that one
    worker is gone, and the copy task Spark runs again would wait for a core forever."""
    try:
        scheduler = context._jsc.sc()
        profile = scheduler.resourceProfileManager().defaultResourceProfile()
        return int(scheduler.maxNumConcurrentTasks(profile))
    except Py4JError as exc:  # a Spark without this (internal) call: the coarse figure
        log.debug("task slots from defaultParallelism: %s", exc)
        return int(context.defaultParallelism)


def free_slots(context: SparkContext, asking: CopyJob) -> int:
    """Task slots not held by the other flows' running copy tasks."""
    with _jobs_lock:
        held = sum(j.tasks for j in _jobs if j is not asking and j.running)
    return max(0, task_slots(context) - held)
