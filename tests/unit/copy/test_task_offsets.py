"""A copy task's one reader of the offsets topic (mm2.copy.task_offsets over
mm2.copy.offsets_reader), on a fake consumer: the partitions its epoch adds, one source
cluster's schema-ID map (newest winning, a broken record skipped with a warning) and, while it
resumes, its positions, each read to the end offsets at the call; every failure names the
topic."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from mm2.copy import offsets_reader, schema_map
from mm2.copy.assignment import assignment_key, encode_additions
from mm2.copy.offsets_reader import Decode, OffsetsTopicReader
from mm2.copy.position_record import PositionRecord
from mm2.copy.positions import holding
from mm2.copy.schema_map import SchemaIdMap
from mm2.copy.spec import Assignment
from mm2.copy.task_offsets import TaskOffsets
from mm2.errors import AuthorizationError, KafkaClientError, TopicNotFoundError
from mm2.records.schema_ids import SchemaIdMapping
from tests.support.specs import copy_spec

TOPIC = "mm2-offsets.primary.internal"
GUID_A = "0b2f5c1e-7a41-4c7e-9d8e-3f1a2b4c5d6e"
GUID_B = "77c1d2e3-f405-4617-8829-3a4b5c6d7e8f"


def position_key(topic: str, partition: int) -> bytes:
    return (
        f'["MirrorSourceConnector",{{"cluster":"primary","partition":{partition},'
        f'"topic":"{topic}"}}]'
    ).encode()


@dataclass
class Record:
    """A consumed record, or (with `code`) an event such as end-of-partition."""

    partition_: int
    offset_: int
    key_: bytes | None = None
    value_: bytes | None = None
    code: int | None = None

    def error(self) -> KafkaError | None:
        return None if self.code is None else KafkaError(self.code)

    def partition(self) -> int:
        return self.partition_

    def offset(self) -> int:
        return self.offset_

    def key(self) -> bytes | None:
        return self.key_

    def value(self) -> bytes | None:
        return self.value_

    def headers(self) -> None:
        return None


def mapping(partition: int, offset: int, m: SchemaIdMapping) -> Record:
    return Record(partition, offset, m.key(), m.value())


@dataclass
class Topic:
    partitions: dict[int, object]
    error: KafkaError | None = None


@dataclass
class Metadata:
    topics: dict[str, Topic]


@dataclass
class FakeConsumer:
    """Hands out one scripted batch per consume() call, then nothing."""

    batches: list[list[Record]]
    partitions: int = 2
    assigned: list[TopicPartition] = field(default_factory=list)
    timeouts: list[float] = field(default_factory=list)
    closed: bool = False
    # what position() answers per partition (unset: librdkafka's -1001)
    positions: dict[int, int] = field(default_factory=dict)

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> Metadata:
        return Metadata({TOPIC: Topic(dict.fromkeys(range(self.partitions)))})

    def incremental_assign(self, partitions: list[TopicPartition]) -> None:
        self.assigned.extend(partitions)

    def consume(self, num_messages: int = 1, timeout: float = -1) -> Sequence[Record]:
        self.timeouts.append(timeout)
        return self.batches.pop(0) if self.batches else []

    def position(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        return [
            TopicPartition(tp.topic, tp.partition, self.positions.get(tp.partition, -1001))
            for tp in partitions
        ]

    def close(self) -> None:
        self.closed = True


@dataclass
class Ends:
    """End offsets as ListOffsets would answer them; records which kind was asked for."""

    ends: dict[int, int]
    asked: list[tuple[list[int], bool]] = field(default_factory=list)

    def __call__(self, partitions: list[int], timeout: float, stable: bool) -> dict[int, int]:
        self.asked.append((partitions, stable))
        return {p: self.ends[p] for p in partitions}


def task_offsets(
    consumer: FakeConsumer, ends: Ends, *, schemas: SchemaIdMap | None = None, task: int = 1
) -> TaskOffsets:
    spec = copy_spec(task=task, epoch="e1", offsets_consumer={"bootstrap.servers": "t:9092"})

    def open_reader(decode: Decode[PositionRecord]) -> OffsetsTopicReader[PositionRecord]:
        return OffsetsTopicReader({}, {}, TOPIC, decode=decode, consumer=consumer, ends=ends)

    return TaskOffsets(spec, schemas=schemas, open_reader=open_reader)


def test_the_schema_map_is_read_to_every_partitions_stable_end_and_keeps_one_clusters() -> None:
    position = Record(1, 0, position_key("t", 0), b'{"offset":4}')
    consumer = FakeConsumer(
        [
            [
                mapping(0, 0, SchemaIdMapping("primary", 7, 1042)),
                mapping(1, 1, SchemaIdMapping("other", 7, 5)),  # another source cluster's
                position,
            ],
            [mapping(1, 2, SchemaIdMapping("primary", GUID_A, GUID_B))],
            [mapping(1, 3, SchemaIdMapping("primary", 7, 2000))],  # newer: it wins
            [mapping(0, 1, SchemaIdMapping("primary", 8, 3000))],  # after the end: poll()
        ]
    )
    ends = Ends({0: 1, 1: 4})
    schemas = SchemaIdMap(TOPIC, cluster="primary")
    offsets = task_offsets(consumer, ends, schemas=schemas)
    assert offsets.catch_up_schema_ids(5) == 3
    assert ends.asked == [([0, 1], True)]  # last stable offsets: what is committed now
    assert [(tp.topic, tp.partition, tp.offset) for tp in consumer.assigned] == [
        (TOPIC, 0, -2),  # OFFSET_BEGINNING
        (TOPIC, 1, -2),
    ]
    assert schemas.rewriter.ids == {7: 2000}
    assert schemas.rewriter.guids == {GUID_A: GUID_B}
    assert schemas.news() == 3
    assert offsets.poll() == []
    assert schemas.rewriter.ids == {7: 2000, 8: 3000} and schemas.news() == 1
    assert consumer.timeouts[-1] == 0  # poll never waits
    offsets.close()
    assert consumer.closed


def test_the_epochs_additions_for_this_task_are_taken_once_and_others_left() -> None:
    key = assignment_key("primary->backup")
    mine = [Assignment("new", 0, "primary.new", -1), Assignment("new", 1, "primary.new", 7)]
    consumer = FakeConsumer(
        [
            [
                Record(0, 0, key, encode_additions("e0", {1: [Assignment("old", 0, "p.old")]})),
                Record(0, 1, key, encode_additions("e1", {1: mine[:1]})),
                Record(0, 2, key, encode_additions("e1", {1: mine, 0: [mine[0]]})),
                Record(0, 3, assignment_key("a->b"), encode_additions("e1", {1: mine})),
            ],
            [Record(0, 4, key, encode_additions("e1", {1: [*mine, mine[0]]}))],
        ]
    )
    ends = Ends({0: 4, 1: 9})  # partition 1 is never waited for
    offsets = task_offsets(consumer, ends)
    assert sorted(offsets.catch_up_assignment(5), key=lambda a: a.partition) == mine
    assert ends.asked == [([0], False)]
    assert offsets.poll() == mine  # each partition once: the caller keeps what it has
    assert offsets.poll() == []


def test_positions_are_read_from_the_partitions_that_hold_the_tasks_keys_then_dropped() -> None:
    partitions = 3
    held = holding("MirrorSourceConnector", "primary", [("orders", 0)])(partitions)
    behind = sorted(set(range(partitions)) - held)
    assert behind  # the test means something only if a partition is not waited for
    place = max(held)
    consumer = FakeConsumer(
        [
            [Record(place, 0, position_key("orders", 0), b'{"offset":40}')],
            [Record(place, 1, position_key("orders", 0), b'{"offset":41}')],
            [Record(place, 2, position_key("orders", 0), b'{"offset":99}')],
        ],
        partitions=partitions,
    )
    ends = Ends({p: 2 if p == place else (0 if p in held else 5) for p in range(partitions)})
    offsets = task_offsets(consumer, ends)
    stored = offsets.positions([("orders", 0)], 5)
    assert stored.offsets == {("orders", 0): 41}
    assert ends.asked == [(sorted(held), False)]
    assert offsets.poll() == []  # positions are the task's own from now on: not kept
    assert offsets.positions([("orders", 0)], 0.1).offsets == {}


def test_a_read_ends_where_the_consumers_position_passed_markers_without_waiting_for_eof() -> None:
    # partition 0: two records, then a commit marker (end 3); partition 1: only an aborted
    # transaction and its marker (end 2), which no record shows. No end-of-partition event
    # comes (the broker holds an empty fetch for fetch.wait.max.ms): the positions say it.
    key = assignment_key("primary->backup")
    mine = [Assignment("new", 0, "primary.new", -1)]
    consumer = FakeConsumer(
        [[Record(0, 0, key, encode_additions("e1", {1: mine})), Record(0, 1, b"other", b"")]],
        positions={0: 3, 1: 2},
    )
    offsets = task_offsets(consumer, Ends({0: 3, 1: 2}))
    assert offsets.catch_up_assignment(5) == mine
    assert len(consumer.timeouts) == 1  # one consume call, then the positions were enough


def test_a_position_never_moves_a_partition_back_nor_counts_when_unset() -> None:
    consumer = FakeConsumer([[Record(0, 4, b"k", b"")]], positions={0: 2})  # an older answer
    schemas = SchemaIdMap(TOPIC, cluster="primary")
    offsets = task_offsets(consumer, Ends({0: 5, 1: 1}), schemas=schemas)
    with pytest.raises(KafkaClientError, match=r"\(at 1 at 0 of 1\)"):
        offsets.catch_up_schema_ids(0.05)  # partition 1: position unset, so still at 0


def test_a_read_that_cannot_reach_the_end_names_the_topic_and_partitions() -> None:
    offsets = task_offsets(
        FakeConsumer([]), Ends({0: 0, 1: 3}), schemas=SchemaIdMap(TOPIC, cluster="primary")
    )
    with pytest.raises(
        KafkaClientError, match=rf"reading {TOPIC} to its end timed out \(at 1 at 0 of 3\)"
    ) as e:
        offsets.catch_up_schema_ids(0.05)
    assert e.value.retriable


def test_an_offsets_topic_that_is_missing_or_unreachable_is_named() -> None:
    class Missing(FakeConsumer):
        def list_topics(self, topic: str | None = None, timeout: float = -1) -> Metadata:
            return Metadata({})

    class Unreachable(FakeConsumer):
        def list_topics(self, topic: str | None = None, timeout: float = -1) -> Metadata:
            raise KafkaException(KafkaError(KafkaError._TRANSPORT))

    with pytest.raises(TopicNotFoundError, match=f"{TOPIC} does not exist"):
        task_offsets(Missing([]), Ends({})).catch_up_assignment(1)
    with pytest.raises(KafkaClientError, match=f"reading the partitions of {TOPIC}"):
        task_offsets(Unreachable([]), Ends({})).catch_up_assignment(1)


def test_a_consumer_refused_by_an_acl_ends_the_read() -> None:
    denied = Record(0, 0, code=KafkaError.TOPIC_AUTHORIZATION_FAILED)
    offsets = task_offsets(FakeConsumer([[denied]]), Ends({0: 1, 1: 0}))
    with pytest.raises(AuthorizationError, match=TOPIC):
        offsets.catch_up_assignment(5)


def test_a_schema_record_that_does_not_parse_is_skipped_with_one_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    key = SchemaIdMapping("primary", 7, 1).key()
    consumer = FakeConsumer(
        [
            [
                Record(0, 0, key, b"{"),
                mapping(0, 1, SchemaIdMapping("primary", "not-a-uuid", GUID_B)),
                mapping(0, 2, SchemaIdMapping("primary", 8, 80)),
            ]
        ]
    )
    schemas = SchemaIdMap(TOPIC, cluster="primary")
    offsets = task_offsets(consumer, Ends({0: 3, 1: 0}), schemas=schemas)
    with caplog.at_level(logging.WARNING, logger=schema_map.__name__):
        assert offsets.catch_up_schema_ids(5) == 1
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2
    assert warnings[0].startswith(f"{TOPIC}: a schema-ID mapping that does not parse")
    assert "not-a-uuid" in warnings[1]
    assert schemas.rewriter.ids == {8: 80}
    assert schemas.rewriter.guids == {}


def test_the_real_consumer_reads_committed_records_from_the_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    configs: list[dict[str, Any]] = []

    class Built(FakeConsumer):
        def __init__(self, config: dict[str, Any]) -> None:
            super().__init__([])
            configs.append(config)

    monkeypatch.setattr(offsets_reader, "Consumer", Built)
    spec = copy_spec(
        offsets_consumer={"bootstrap.servers": "b:9092", "isolation.level": "read_uncommitted"}
    )
    offsets = TaskOffsets.open(spec, None)
    assert isinstance(offsets, TaskOffsets)
    (config,) = configs
    assert config["bootstrap.servers"] == "b:9092"
    assert config["isolation.level"] == "read_committed"
    assert config["enable.partition.eof"] is True
    assert config["enable.auto.commit"] is False
    assert TaskOffsets.open(copy_spec(), None) is None  # no reader named: none
