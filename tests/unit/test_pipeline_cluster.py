"""What mm2.pipeline does for a Spark cluster: the executors' Python, the driver's address, and
where a copy task that Spark runs again resumes."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field

import pytest

from mm2.kafka.stream_copier import Assignment, CopyTaskSpec
from mm2.pipeline.copy_job import PositionsTopic, _resumed
from mm2.pipeline.session import _python_environment


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


@dataclass(frozen=True)
class _Committed(PositionsTopic):
    """The offsets topic as a retried task would read it, without a broker."""

    committed: dict[tuple[str, int], int] = field(default_factory=dict)

    def read(self, timeout: float = 60.0) -> dict[tuple[str, int], int]:
        return self.committed


def test_a_retried_copy_task_starts_after_what_was_committed() -> None:
    spec = CopyTaskSpec(
        flow="primary->backup",
        task=0,
        connector="MirrorSourceConnector",
        source_alias="primary",
        source_cluster_id="c1",
        source_consumer={"bootstrap.servers": "s:9092"},
        target_producer={"bootstrap.servers": "t:9092"},
        offsets_topic="mm2-offsets.primary.internal",
        partitions=[
            Assignment("orders", 0, "primary.orders", 100),
            Assignment("orders", 1, "primary.orders", -1),
            Assignment("orders", 2, "primary.orders", 7),
        ],
    )
    # Partition 0 moved on since the epoch began; 1 got its first position; 2 none since.
    topic = _Committed({}, {}, "mm2-offsets.primary.internal", "MirrorSourceConnector", "primary",
                       committed={("orders", 0): 499, ("orders", 1): 41})  # fmt: skip
    resumed = _resumed(spec, topic, attempt=1)
    assert [a.next_offset for a in resumed.partitions] == [500, 42, 7]
    assert resumed.partitions[0].target_topic == "primary.orders"
    assert (resumed.flow, resumed.task, resumed.transactional_id) == ("primary->backup", 0, None)
