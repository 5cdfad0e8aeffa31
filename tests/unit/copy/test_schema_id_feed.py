"""The schema-ID map read from the offsets topic (mm2.copy.schema_map), on a fake consumer:
every partition to its end first, then what arrives; one source cluster's mappings, the newest
winning, a broken record skipped with a warning."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from mm2.copy import schema_map
from mm2.copy.schema_map import MapRecord, SchemaIdFeed
from mm2.errors import AuthorizationError, KafkaClientError
from mm2.records.schema_ids import SchemaIdMapping

TOPIC = "mm2-offsets.primary.internal"
GUID_A = "0b2f5c1e-7a41-4c7e-9d8e-3f1a2b4c5d6e"
GUID_B = "77c1d2e3-f405-4617-8829-3a4b5c6d7e8f"
POSITION_KEY = b'["MirrorSourceConnector",{"cluster":"primary","partition":0,"topic":"t"}]'


@dataclass
class Record:
    """A consumed record, or (with `code`) an event such as end-of-partition."""

    partition_: int
    key_: bytes | None = None
    value_: bytes | None = None
    code: int | None = None
    offset_: int = 0

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


def mapping(partition: int, m: SchemaIdMapping) -> Record:
    return Record(partition, m.key(), m.value())


def eof(partition: int) -> Record:
    return Record(partition, code=KafkaError._PARTITION_EOF)


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

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> Metadata:
        return Metadata({TOPIC: Topic(dict.fromkeys(range(self.partitions)))})

    def incremental_assign(self, partitions: list[TopicPartition]) -> None:
        self.assigned.extend(partitions)

    def consume(self, num_messages: int = 1, timeout: float = -1) -> Sequence[MapRecord]:
        self.timeouts.append(timeout)
        return self.batches.pop(0) if self.batches else []

    def close(self) -> None:
        self.closed = True


def test_catch_up_reads_every_partition_to_its_end_and_keeps_one_clusters_mappings() -> None:
    position = Record(1, POSITION_KEY, b'{"offset":4}')
    consumer = FakeConsumer(
        [
            [
                mapping(0, SchemaIdMapping("primary", 7, 1042)),
                mapping(1, SchemaIdMapping("other", 7, 5)),  # another source cluster's
                position,
                eof(0),
            ],
            [mapping(1, SchemaIdMapping("primary", GUID_A, GUID_B))],
            [mapping(1, SchemaIdMapping("primary", 7, 2000)), eof(1)],  # newer: it wins
            [mapping(0, SchemaIdMapping("primary", 8, 3000))],  # after the end: for poll()
        ]
    )
    feed = SchemaIdFeed(consumer, TOPIC, cluster="primary")
    assert feed.catch_up(5) == 3
    assert [(tp.topic, tp.partition, tp.offset) for tp in consumer.assigned] == [
        (TOPIC, 0, -2),  # OFFSET_BEGINNING
        (TOPIC, 1, -2),
    ]
    assert feed.rewriter.ids == {7: 2000}
    assert feed.rewriter.guids == {GUID_A: GUID_B}
    assert feed.poll() == 1
    assert feed.rewriter.ids == {7: 2000, 8: 3000}
    assert feed.poll() == 0
    assert consumer.timeouts[-1] == 0  # poll never waits
    feed.close()
    assert consumer.closed


def test_a_second_catch_up_waits_only_for_partitions_read_since_their_end() -> None:
    consumer = FakeConsumer([[eof(0), eof(1)]])
    feed = SchemaIdFeed(consumer, TOPIC, cluster="primary")
    assert feed.catch_up(5) == 0
    consumer.batches = [[mapping(1, SchemaIdMapping("primary", 9, 90))], [eof(1)]]
    feed.poll()
    assert feed.catch_up(5) == 0
    assert consumer.batches == []  # it read partition 1 to its new end
    assert feed.rewriter.ids == {9: 90}


def test_a_catch_up_that_cannot_reach_the_end_names_the_topic_and_partitions() -> None:
    feed = SchemaIdFeed(FakeConsumer([[eof(0)]]), TOPIC, cluster="primary")
    with pytest.raises(KafkaClientError, match=rf"{TOPIC} timed out .*partition\(s\) 1 not") as e:
        feed.catch_up(0.05)
    assert e.value.retriable


def test_an_offsets_topic_that_is_missing_or_unreachable_is_named() -> None:
    class Missing(FakeConsumer):
        def list_topics(self, topic: str | None = None, timeout: float = -1) -> Metadata:
            return Metadata({})

    class Unreachable(FakeConsumer):
        def list_topics(self, topic: str | None = None, timeout: float = -1) -> Metadata:
            raise KafkaException(KafkaError(KafkaError._TRANSPORT))

    with pytest.raises(KafkaClientError, match=f"{TOPIC} is not readable"):
        SchemaIdFeed(Missing([]), TOPIC, cluster="primary").catch_up(1)
    with pytest.raises(KafkaClientError, match=f"schema-ID map from {TOPIC}"):
        SchemaIdFeed(Unreachable([]), TOPIC, cluster="primary").catch_up(1)


def test_a_consumer_refused_by_an_acl_ends_the_feed() -> None:
    denied = Record(0, code=KafkaError.TOPIC_AUTHORIZATION_FAILED)
    feed = SchemaIdFeed(FakeConsumer([[denied]]), TOPIC, cluster="primary")
    with pytest.raises(AuthorizationError, match=TOPIC):
        feed.catch_up(5)


def test_a_record_that_does_not_parse_is_skipped_with_one_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    key = SchemaIdMapping("primary", 7, 1).key()
    consumer = FakeConsumer(
        [
            [
                Record(0, key, b"{", offset_=3),
                mapping(0, SchemaIdMapping("primary", "not-a-uuid", GUID_B)),
                mapping(0, SchemaIdMapping("primary", 8, 80)),
                eof(0),
                eof(1),
            ]
        ]
    )
    feed = SchemaIdFeed(consumer, TOPIC, cluster="primary")
    with caplog.at_level(logging.WARNING, logger=schema_map.__name__):
        assert feed.catch_up(5) == 1
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2
    assert warnings[0].startswith(f"{TOPIC}-0@3: a schema-ID mapping that does not parse")
    assert "not-a-uuid" in warnings[1]
    assert feed.rewriter.ids == {8: 80}
    assert feed.rewriter.guids == {}


def test_open_reads_committed_mappings_from_the_start_with_the_flows_settings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    configs: list[dict[str, Any]] = []

    class Built(FakeConsumer):
        def __init__(self, config: dict[str, Any]) -> None:
            super().__init__([])
            configs.append(config)

    monkeypatch.setattr(schema_map, "Consumer", Built)
    settings = {"bootstrap.servers": "b:9092", "isolation.level": "read_uncommitted"}
    feed = SchemaIdFeed.open(settings, TOPIC, flow="primary->backup", cluster="primary")
    assert isinstance(feed, SchemaIdFeed)
    (config,) = configs
    assert config["bootstrap.servers"] == "b:9092"
    assert config["isolation.level"] == "read_committed"
    assert config["enable.partition.eof"] is True
    assert config["enable.auto.commit"] is False
    assert config["group.id"] == "mm2-schema-ids-primary->backup"
