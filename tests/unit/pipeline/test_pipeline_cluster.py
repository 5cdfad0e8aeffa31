"""What mm2.pipeline does for a Spark cluster: the executors' Python, the driver's address, and
where a copy task that Spark runs again resumes."""

from __future__ import annotations

import os
import sys
from typing import Any, cast

import pytest

from mm2.copy.loop import CopyLoop
from mm2.copy.position_record import PositionRecord, StoredPositions
from mm2.copy.spec import Assignment
from mm2.pipeline import copy_job
from mm2.pipeline.session import _python_environment
from tests.support.specs import copy_spec


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    monkeypatch.delenv("SPARK_LOCAL_IP", raising=False)
    return monkeypatch


def test_spark_pyspark_python_names_the_executors_python(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("PYSPARK_PYTHON", "/usr/bin/python3")
    _python_environment(
        {"spark.master": "spark://m:7077", "spark.pyspark.python": "./environment/bin/python"}
    )
    assert os.environ["PYSPARK_PYTHON"] == "./environment/bin/python"


def test_a_cluster_master_leaves_the_driver_address_to_spark(
    clean_env: pytest.MonkeyPatch,
) -> None:
    _python_environment({"spark.master": "spark://m:7077"})
    assert "SPARK_LOCAL_IP" not in os.environ
    assert os.environ["PYSPARK_PYTHON"] == sys.executable


def test_a_local_master_binds_to_loopback(clean_env: pytest.MonkeyPatch) -> None:
    _python_environment({"spark.master": "local[16]"})
    assert os.environ["SPARK_LOCAL_IP"] == "127.0.0.1"


def test_a_copy_task_starts_after_what_was_committed() -> None:
    """Read after its producer fenced earlier holders of its id (a retried attempt, a zombie,
    a deposed leader's planner): what they committed since the driver read the positions."""
    spec = copy_spec(
        transactional=False,
        partitions=[
            Assignment("orders", 0, "primary.orders", 100),
            Assignment("orders", 1, "primary.orders", -1),
            Assignment("orders", 2, "primary.orders", 7),
            Assignment("events", 0, "primary.events", 3, topic_id="new-id"),
        ],
    )
    # Partition 0 moved on since the epoch began; 1 got its first position; 2 none since;
    # events-0's position is of an events topic since deleted and re-created: not applied.
    committed = StoredPositions()
    committed.apply(
        [
            PositionRecord("orders", 0, 499, None, None),
            PositionRecord("orders", 1, 41, None, None),
            PositionRecord("other", 0, 5, None, None),
            PositionRecord("events", 0, 900, None, None, topic_id="old-id"),
        ]
    )
    copier = CopyLoop.open(spec)
    try:
        moved = copier.resume_from(committed)
    finally:
        copier.close()
    assert copier.positions() == {
        ("orders", 0): 500,
        ("orders", 1): 42,
        ("orders", 2): 7,
        ("events", 0): 3,
    }
    assert moved == ["orders-0@500", "orders-1@42"]


class _Scheduler:
    """The JVM side task_slots asks: counts the asks."""

    def __init__(self) -> None:
        self.asked = 0
        self.cores = 2

    def sc(self) -> _Scheduler:
        return self

    def resourceProfileManager(self) -> _Scheduler:
        return self

    def defaultResourceProfile(self) -> str:
        return "default"

    def maxNumConcurrentTasks(self, profile: str) -> int:
        self.asked += 1
        return self.cores


class _Context:
    def __init__(self) -> None:
        self._jsc = _Scheduler()


def test_task_slots_asks_the_jvm_at_most_once_a_second_per_context(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [1000.0]
    monkeypatch.setattr("mm2.pipeline.copy_job.time.monotonic", lambda: now[0])
    context, other = _Context(), _Context()
    slots = cast(Any, context)
    assert [copy_job.task_slots(slots) for _ in range(5)] == [2] * 5
    assert context._jsc.asked == 1
    assert copy_job.task_slots(cast(Any, other)) == 2 and other._jsc.asked == 1
    context._jsc.cores = 1  # a worker lost
    now[0] += 0.5
    assert copy_job.task_slots(slots) == 2  # as Spark said half a second ago
    now[0] += 0.6
    assert copy_job.task_slots(slots) == 1 and context._jsc.asked == 2
