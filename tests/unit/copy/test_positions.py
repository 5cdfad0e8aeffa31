"""Positions in Connect's offsets topic: record bytes, what a reader keeps, and the planner's
pure decisions (a copy task's spec and error)."""

from __future__ import annotations

import json
import pickle

import pytest

from mm2.copy.failure import CopyFailure, CopyTaskFailed
from mm2.copy.position_record import (
    CLUSTER_ID_HEADER,
    LEADER_EPOCH_HEADER,
    STATS_HEADER,
    TOPIC_ID_HEADER,
    PositionRecord,
    StoredPositions,
    decode_position,
    position_key,
    position_record,
)
from mm2.copy.positions import PositionsTopic
from mm2.copy.source_ends import (
    SourceEnds,
    decode_source_ends,
    encode_source_ends,
    source_ends_key,
)
from mm2.copy.spec import BEGINNING, Assignment, CopyTaskSpec
from mm2.copy.stats import CopyStats
from mm2.errors import KafkaClientError, MM2Error, RecordTooLargeError
from mm2.records.java_partitioner import java_partition, murmur2
from tests.support.specs import copy_spec


def _stats(target_topic: str = "", position: int = 41) -> CopyStats:
    return CopyStats(
        "orders",
        2,
        target_topic,
        position=position,
        records=3,
        bytes=30,
        skipped=0,
        min_timestamp=1,
        max_timestamp=3,
        sum_timestamp=6,
        finished_ms=100,
        age_min_ms=5,
        age_max_ms=9,
        age_sum_ms=21,
    )


def test_position_record_is_apaches_key_and_value_with_our_headers() -> None:
    stats = _stats()
    key, value, headers = position_record(
        "MirrorSourceConnector", "primary", "orders", 2, 41, cluster_id="abc", stats=stats
    )
    assert key == b'["MirrorSourceConnector",{"cluster":"primary","partition":2,"topic":"orders"}]'
    assert value == b'{"offset":41}'
    found = dict(headers)
    assert found[CLUSTER_ID_HEADER] == b"abc"
    raw = found[STATS_HEADER]
    # the header's wire format: ten integers in a fixed order, unchanged since mm2 wrote it first
    assert raw == b"[3,30,0,1,3,6,5,9,21,100]"
    decoded = decode_position(
        key, value, headers, connector="MirrorSourceConnector", cluster="primary"
    )
    assert decoded == PositionRecord("orders", 2, 41, "abc", stats)
    assert (
        decode_position(key, value, headers, connector="MirrorSourceConnector", cluster="other")
        is None
    )
    bad = CopyStats.from_header(b"not json", topic="t", partition=0, target_topic="", position=1)
    assert bad is None
    short = CopyStats.from_header(b"[1,1,0]", topic="t", partition=0, target_topic="", position=1)
    assert short is None


def test_records_gone_or_truncated_travel_in_two_more_integers_only_when_there_are_any() -> None:
    stats = _stats()
    stats.gone, stats.truncated = 500, 7
    raw = stats.header()
    assert raw == b"[3,30,0,1,3,6,5,9,21,100,500,7]"
    back = CopyStats.from_header(raw, topic="orders", partition=2, target_topic="", position=41)
    assert back == stats
    # an older mm2's ten integers read as none gone or truncated
    old = CopyStats.from_header(
        b"[3,30,0,1,3,6,5,9,21,100]", topic="orders", partition=2, target_topic="", position=41
    )
    assert old is not None and (old.gone, old.truncated) == (0, 0)
    # a newer mm2's header, with fields this version does not know, reads as far as it knows
    newer = b"[3,30,0,1,3,6,5,9,21,100,500,7,90,1700000000123,42,43]"
    read = CopyStats.from_header(newer, topic="orders", partition=2, target_topic="", position=41)
    assert read is not None and (read.gone, read.truncated, read.source_end) == (500, 7, 90)
    assert read.source_end_ms == 1_700_000_000_123 and read.header() == newer[:-7] + b"]"


def test_the_source_end_seen_travels_after_the_counts_and_outlives_a_rewritten_position() -> None:
    stats = _stats()
    stats.source_end, stats.source_end_ms = 90, 1_700_000_000_123
    raw = stats.header()
    assert raw == b"[3,30,0,1,3,6,5,9,21,100,0,0,90,1700000000123]"
    back = CopyStats.from_header(raw, topic="orders", partition=2, target_topic="", position=41)
    assert back == stats
    positions = StoredPositions()
    positions.apply(
        [
            PositionRecord("orders", 2, 41, "ours", back),
            PositionRecord("orders", 2, 41, "ours", None),  # the planner's rewrite: no stats
        ]
    )
    assert positions.source_ends == {("orders", 2): (90, 1_700_000_000_123)}
    positions.apply([PositionRecord("orders", 2, None, None, None)])  # deleted over REST
    assert positions.source_ends == {}


def test_a_position_names_its_source_topic_and_one_of_another_topic_does_not_apply() -> None:
    key, value, headers = position_record(
        "MirrorSourceConnector", "primary", "orders", 0, 2999, cluster_id="abc", topic_id="old"
    )
    assert dict(headers)[TOPIC_ID_HEADER] == b"old"
    decoded = decode_position(
        key, value, headers, connector="MirrorSourceConnector", cluster="primary"
    )
    assert decoded is not None and decoded.topic_id == "old"
    stored = StoredPositions()
    stored.apply([decoded])
    assert stored.next_offset(("orders", 0), "old", -1) == 3000
    assert stored.next_offset(("orders", 0), "", -1) == 3000  # id unknown: Apache's positions
    assert stored.next_offset(("orders", 0), "new", -1) == BEGINNING  # re-created since
    assert stored.next_offset(("orders", 1), "new", -1) == -1  # nothing stored
    # A later position without an id (Apache MM2 took over) is taken as it is.
    stored.apply([PositionRecord("orders", 0, 3100, None, None)])
    assert stored.next_offset(("orders", 0), "new", -1) == 3101


def test_tombstone_has_no_value_and_apache_records_no_headers() -> None:
    key, value, headers = position_record(
        "MirrorSourceConnector", "a", "t", 0, None, cluster_id=None
    )
    assert value is None and headers == [] and key.startswith(b'["MirrorSourceConnector"')


def test_stored_positions_keep_the_latest_and_name_foreign_clusters() -> None:
    positions = StoredPositions()
    positions.apply(
        [
            PositionRecord("t", 0, 5, "ours", None),
            PositionRecord("t", 0, 9, "ours", None),
            PositionRecord("t", 1, 3, None, None),  # written by Apache MM2: accepted
            PositionRecord("u", 0, 7, "theirs", None),
            PositionRecord("v", 0, 1, "theirs", None),
            PositionRecord("v", 0, None, None, None),  # deleted over REST
        ]
    )
    assert positions.offsets == {("t", 0): 9, ("t", 1): 3, ("u", 0): 7}
    assert positions.foreign("ours") == {("u", 0): "theirs"}


def test_copy_task_spec_survives_json_and_pickle() -> None:
    spec = copy_spec(flow="a->b", task=1, partitions=[Assignment("t", 0, "a.t", 42)])
    assert CopyTaskSpec.from_json(spec.to_json()) == spec
    assert pickle.loads(pickle.dumps(spec)) == spec


def test_a_copy_tasks_error_crosses_spark_typed() -> None:
    raised = CopyTaskFailed(CopyFailure.of(RecordTooLargeError("record t-0@5 is too large")))
    text = f"""An error occurred while calling o1.collect.
: org.apache.spark.SparkException: Job aborted due to stage failure: ...
Traceback (most recent call last):
  File "x.py", line 1, in run
mm2.copy.failure.CopyTaskFailed: {raised}
\tat org.apache.spark.api.python.BasePythonRunner...
"""
    failure = CopyFailure.find(text)
    assert failure == CopyFailure("record-too-large", False, "record t-0@5 is too large", True)
    error = failure.error()
    assert type(error) is RecordTooLargeError and error.operator and not error.retriable
    assert CopyFailure.find("org.apache.spark.SparkException: Job 3 cancelled") is None


def test_a_spark_failure_before_the_copy_task_ran_names_the_python_exception() -> None:
    text = """An error occurred while calling z:org.apache.spark.api.python.PythonRDD.collect.
: org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 failed 4 times
org.apache.spark.api.python.PythonException: [PYTHON_EXCEPTION] An exception was thrown from
Traceback (most recent call last):
  File "pyspark/worker.py", line 4197, in invoke_udf
ModuleNotFoundError: No module named 'cryptography'
 SQLSTATE: 38000
\tat org.apache.spark.api.python.BasePythonRunner$ReaderIterator.handlePythonException
"""
    failure = CopyFailure.of_spark(text)
    assert failure == CopyFailure(
        "spark", False, "ModuleNotFoundError: No module named 'cryptography'"
    )
    assert not failure.error().operator  # restarted with backoff, the cause shown


def test_a_retriable_kafka_error_and_a_foreign_one_keep_their_meaning() -> None:
    failure = CopyFailure.of(KafkaClientError("broker down", retriable=True))
    back = CopyFailure.find(str(CopyTaskFailed(failure)))
    assert back is not None
    error = back.error()
    assert type(error) is KafkaClientError and error.retriable and not error.operator
    foreign = CopyFailure.of(ZeroDivisionError("division by zero"))
    assert foreign.kind == "error" and "ZeroDivisionError" in foreign.message
    assert type(foreign.error()) is MM2Error and not foreign.error().operator


def test_copy_stats_travel_through_the_header() -> None:
    stats = _stats("a.t", position=7)
    raw = CopyStats.from_header(
        stats.header(), topic="orders", partition=2, target_topic="a.t", position=7
    )
    assert raw == stats


def test_a_position_carries_the_leader_epoch_of_its_record_beside_apaches_value() -> None:
    key, value, headers = position_record(
        "MirrorSourceConnector", "primary", "orders", 2, 41, cluster_id="abc", leader_epoch=4
    )
    assert value == b'{"offset":41}'  # what Apache MM2 reads, unchanged
    assert dict(headers)[LEADER_EPOCH_HEADER] == b"4"
    decoded = decode_position(
        key, value, headers, connector="MirrorSourceConnector", cluster="primary"
    )
    assert decoded is not None and decoded.leader_epoch == 4
    stored = StoredPositions()
    stored.apply([decoded])
    assert stored.leader_epochs == {("orders", 2): 4}
    # A later position without one (past markers, or Apache MM2's) drops it.
    _, _, plain = position_record(
        "MirrorSourceConnector", "primary", "orders", 2, 45, cluster_id="abc"
    )
    later = decode_position(
        key, b'{"offset":45}', plain, connector="MirrorSourceConnector", cluster="primary"
    )
    assert later is not None and later.leader_epoch is None
    stored.apply([later])
    assert stored.leader_epochs == {}


def test_the_partitions_holding_a_flows_keys_are_where_javas_partitioner_puts_them() -> None:
    topic = PositionsTopic(
        flow="primary->backup",
        topic="mm2-offsets.primary.internal",
        connector="MirrorSourceConnector",
        source_alias="primary",
        partitions=25,
        replication_factor=0,
        admin_config={},
        consumer_config={},
        producer_config={},
        source_admin_config={},
    )
    key = b'["MirrorSourceConnector",{"cluster":"primary","partition":2,"topic":"orders"}]'
    # Kafka's own vectors for Utils.murmur2 (UtilsTest), as signed 32-bit ints
    vectors = {
        b"21": -973932308,
        b"foobar": -790332482,
        b"abc": 479470107,
        b"a-little-bit-longer-string": -1486304829,
    }
    for data, want in vectors.items():
        assert murmur2(data) == want & 0xFFFFFFFF, data
    held = topic.holding([("orders", 2)])
    assert held(25) == {0, java_partition(key, 25)}  # partition 0: notices and assignments
    assert held(1) == {0}


def test_the_assignment_publisher_never_creates_the_offsets_topic_by_producing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A deleted offsets topic is created again compacted (PositionsTopic.ensure), never by a
    produce with the broker's defaults (one partition, deleted by retention)."""
    import mm2.copy.assignment

    seen: list[dict[str, object]] = []

    class Capture:
        def __init__(self, config: dict[str, object]) -> None:
            seen.append(config)

    monkeypatch.setattr(mm2.copy.assignment, "Producer", Capture)
    mm2.copy.assignment.AssignmentPublisher({"bootstrap.servers": "b:9092"}, "offsets", "a->b")
    assert [c.get("allow.auto.create.topics") for c in seen] == [False]


def test_the_source_ends_the_mirror_read_travel_beside_the_positions_and_the_newest_wins() -> None:
    ends = {("orders", 0): 180, ("orders", 2): 60, ("audit", 0): 7}
    key = source_ends_key("primary->backup")
    value = encode_source_ends(1_700_000_008_000, ends)
    assert json.loads(key) == ["mm2-source-ends", {"flow": "primary->backup"}]
    # partition 1 of orders was not read: it is not said, never said to be 0
    assert json.loads(value)["ends"] == {"audit": [7], "orders": [180, -1, 60]}
    back = decode_source_ends(key, value)
    assert back == SourceEnds("primary->backup", 1_700_000_008_000, ends)
    assert decode_source_ends(key, None) is None  # a tombstone
    assert decode_source_ends(key, b"{") is None
    assert (
        decode_source_ends(
            position_key("MirrorSourceConnector", "primary", "orders", 0), b'{"offset":1}'
        )
        is None
    )
    # Not a position, to a reader that does not look for them.
    assert (
        decode_position(key, value, [], connector="MirrorSourceConnector", cluster="primary")
        is None
    )
    positions = StoredPositions()
    seen = _stats()
    seen.source_end, seen.source_end_ms = 150, 1_700_000_009_000
    positions.apply_ends(back)
    positions.apply([PositionRecord("orders", 0, 41, "ours", seen)])  # newer: taken
    positions.apply_ends(SourceEnds("primary->backup", 1_700_000_001_000, {("orders", 2): 1}))
    assert positions.source_ends == {
        ("orders", 0): (150, 1_700_000_009_000),
        ("orders", 2): (60, 1_700_000_008_000),
        ("audit", 0): (7, 1_700_000_008_000),
    }
