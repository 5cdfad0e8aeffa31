"""A flow's copy tasks as one long-running Spark job per epoch (see docs/architecture.md).

The driver starts an epoch with one Spark task per copy task; each runs mm2.kafka.stream_copier
inside its Python worker until the driver cancels the job's group (assignment changed, pause,
stop) or it fails. Record bytes never enter the JVM, and nothing but a line per task comes back.
"""

from __future__ import annotations

import itertools
import logging
import re
import threading
from collections.abc import Iterator, Sequence

from pyspark import SparkContext

from mm2.kafka.stream_copier import CopyTaskSpec, StreamCopier

__all__ = ["CopyJob", "free_slots", "python_error"]

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


def _run_tasks(specs: list[str]) -> object:
    def run(index: int, _rows: Iterator[int]) -> Iterator[str]:
        spec = CopyTaskSpec.from_json(specs[index])
        copier = StreamCopier(spec)
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

    def start(self, specs: Sequence[CopyTaskSpec]) -> None:
        """Start an epoch of len(specs) copy tasks (the previous one must be cancelled)."""
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
                rdd.mapPartitionsWithIndex(_run_tasks(payload)).collect()  # type: ignore[arg-type]
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


def free_slots(context: SparkContext, asking: CopyJob) -> int:
    """Task slots not held by the other flows' running copy tasks."""
    with _jobs_lock:
        held = sum(j.tasks for j in _jobs if j is not asking and j.running)
    return max(0, context.defaultParallelism - held)
