"""Positions in Connect's offsets topic: record bytes, what a reader keeps, and the planner's
pure decisions (exactly-once keys, a copy task's error)."""

from __future__ import annotations

import pytest

from mm2.config import load_properties, parse_properties
from mm2.connectors.source import exactly_once
from mm2.errors import ConfigError
from mm2.kafka.copy_result import CopyResult, WorkUnit
from mm2.kafka.offset_store import (
    CLUSTER_ID_HEADER,
    STATS_HEADER,
    OffsetRecord,
    PositionStats,
    SourcePositions,
    offset_record,
)
from mm2.kafka.stream_copier import Assignment, CopyTaskSpec
from mm2.pipeline.copy_job import python_error


def test_position_record_is_apaches_key_and_value_with_our_headers() -> None:
    stats = PositionStats(3, 30, 0, 1, 3, 6, 5, 9, 21, 100)
    key, value, headers = offset_record(
        "MirrorSourceConnector", "primary", "orders", 2, 41, cluster_id="abc", stats=stats
    )
    assert key == b'["MirrorSourceConnector",{"cluster":"primary","partition":2,"topic":"orders"}]'
    assert value == b'{"offset":41}'
    found = dict(headers)
    assert found[CLUSTER_ID_HEADER] == b"abc"
    raw = found[STATS_HEADER]
    assert isinstance(raw, bytes) and PositionStats.decode(raw) == stats
    assert PositionStats.decode(b"not json") is None


def test_tombstone_has_no_value_and_apache_records_no_headers() -> None:
    key, value, headers = offset_record("MirrorSourceConnector", "a", "t", 0, None, cluster_id=None)
    assert value is None and headers == [] and key.startswith(b'["MirrorSourceConnector"')


def test_source_positions_keep_the_latest_and_name_foreign_clusters() -> None:
    positions = SourcePositions()
    positions.apply(
        [
            OffsetRecord("t", 0, 5, "ours", None),
            OffsetRecord("t", 0, 9, "ours", None),
            OffsetRecord("t", 1, 3, None, None),  # written by Apache MM2: accepted
            OffsetRecord("u", 0, 7, "theirs", None),
            OffsetRecord("v", 0, 1, "theirs", None),
            OffsetRecord("v", 0, None, None, None),  # deleted over REST
        ]
    )
    assert positions.offsets == {("t", 0): 9, ("t", 1): 3, ("u", 0): 7}
    assert positions.foreign("ours") == {("u", 0): "theirs"}


def _flow(extra: str = "") -> object:
    text = f"""clusters = a, b
a.bootstrap.servers = a:9092
b.bootstrap.servers = b:9092
a->b.enabled = true
{extra}
"""
    return load_properties(parse_properties(text, "mm2.properties")).flow("a", "b")


@pytest.mark.parametrize(
    ("extra", "on"),
    [
        ("", True),
        ("exactly.once.source.support = disabled", False),
        ("b.exactly.once.source.support = disabled", False),
        ("a->b.exactly.once.source.support = enabled", True),
    ],
)
def test_exactly_once_is_on_unless_apaches_key_disables_it(extra: str, on: bool) -> None:
    assert exactly_once(_flow(extra), read_committed=True) is on  # type: ignore[arg-type]


def test_exactly_once_required_needs_read_committed() -> None:
    flow = _flow("exactly.once.support = required")
    with pytest.raises(ConfigError, match="read_committed"):
        exactly_once(flow, read_committed=False)  # type: ignore[arg-type]


def test_copy_task_spec_survives_json() -> None:
    spec = CopyTaskSpec(
        flow="a->b", task=1, connector="MirrorSourceConnector", source_alias="a",
        source_cluster_id="id", source_consumer={"bootstrap.servers": "a:1"},
        target_producer={}, offsets_topic="mm2-offsets.a.internal",
        partitions=[Assignment("t", 0, "a.t", 42)],
        transactional_id="a-mm2-MirrorSourceConnector-1",
    )  # fmt: skip
    assert CopyTaskSpec.from_json(spec.to_json()) == spec


def test_python_error_finds_the_copy_tasks_exception_in_a_spark_failure() -> None:
    text = """An error occurred while calling o1.collect.
: org.apache.spark.SparkException: Job aborted due to stage failure: ...
Traceback (most recent call last):
  File "x.py", line 1, in run
mm2.errors.RecordTooLargeError: record t-0@5 is larger than a.t on the target accepts
\tat org.apache.spark.api.python.BasePythonRunner...
"""
    assert python_error(text) == (
        "RecordTooLargeError",
        "record t-0@5 is larger than a.t on the target accepts",
    )
    assert python_error("org.apache.spark.SparkException: Job 3 cancelled") is None


def test_position_stats_carry_a_copy_result_through_the_header() -> None:
    unit = WorkUnit("t", 0, 5, 8, "a.t")
    res = CopyResult(
        unit, records=3, bytes=30, skipped=1, min_timestamp=1, max_timestamp=3,
        sum_timestamp=6, age_min_ms=5, age_max_ms=9, age_sum_ms=21,
    )  # fmt: skip
    stats = PositionStats.of(res, 100)
    raw = PositionStats.decode(stats.encode())
    assert raw is not None
    back = raw.result(unit)
    assert back == CopyResult(
        unit, records=3, bytes=30, skipped=1, min_timestamp=1, max_timestamp=3,
        sum_timestamp=6, finished_ms=100, age_min_ms=5, age_max_ms=9, age_sum_ms=21,
    )  # fmt: skip
