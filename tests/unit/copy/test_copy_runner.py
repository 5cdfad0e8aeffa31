"""The thread runner of copy tasks (mm2.copy.runner) and one copy task's run from start to end
(mm2.copy.task): an error leaves typed, cancelling ends every task without a failure."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from mm2.copy.failure import CopyTaskFailed
from mm2.copy.runner import ThreadRunner
from mm2.copy.spec import Assignment, CopyTaskSpec
from mm2.copy.task import run_copy_task
from mm2.errors import RecordTooLargeError
from tests.support.specs import copy_spec


def _spec(task: int) -> CopyTaskSpec:
    return copy_spec(
        task=task,
        transactional=False,
        partitions=[Assignment("orders", task, "primary.orders", 0)],
    )


def _wait(check: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.01)


class FakeLoop:
    """Stands in for CopyLoop: runs until told to stop, or raises what it is given."""

    def __init__(self, failure: Exception | None) -> None:
        self.failure = failure
        self.closed = False

    def catch_up_assignment(self) -> list[str]:
        return []

    def catch_up_schema_ids(self) -> int:
        return 0

    def committed(self, timeout: float) -> None:
        return None

    def resume_from(self, committed: object) -> list[str]:
        return []

    def run(self, keep_going: Callable[[], bool]) -> None:
        while keep_going():
            if self.failure is not None:
                raise self.failure
            time.sleep(0.01)

    def close(self) -> None:
        self.closed = True


def test_a_copy_tasks_error_leaves_it_typed_and_closes_the_loop() -> None:
    loop = FakeLoop(RecordTooLargeError("record orders-0@5 is too large"))
    try:
        run_copy_task(_spec(0), attempt=0, positions=None, open_loop=lambda s: loop)  # type: ignore[arg-type,return-value]
    except CopyTaskFailed as exc:
        assert exc.failure.kind == "record-too-large" and exc.failure.operator
        assert "orders-0@5" in exc.failure.message
    else:
        raise AssertionError("the copy task did not fail")
    assert loop.closed


def test_one_failing_task_ends_the_epoch_with_its_failure() -> None:
    started = threading.Event()

    def task(spec: CopyTaskSpec, positions: Any, keep_going: Callable[[], bool]) -> None:
        failure = RecordTooLargeError("too large") if spec.task == 1 else None
        loop: Any = FakeLoop(failure)
        started.set()
        run_copy_task(
            spec, attempt=0, positions=positions, keep_going=keep_going, open_loop=lambda s: loop
        )

    runner = ThreadRunner(task, slots=2)
    runner.start([_spec(0), _spec(1)], None)
    assert started.wait(30)
    _wait(lambda: not runner.running)
    failure = runner.take_failure()
    assert failure is not None and failure.kind == "record-too-large"
    assert runner.take_failure() is None  # once
    runner.start([_spec(0)], None)  # a new epoch after the failed one
    assert runner.running
    runner.cancel()
    assert not runner.running and runner.take_failure() is None  # cancelled: no failure
