"""The copy loop with a flow's schema-ID map (mm2.copy.schema_gate): IDs rewritten inside the
transaction, a partition held at its first record whose schema is not mirrored yet (never
copied with the source's ID), released when the map has news, said at WARN past a bound;
only topics a subject describes read as framed, and a look-alike ID that three passes of the
schema connector did not put under a subject copied as it is."""

from __future__ import annotations

import logging
from typing import Any, cast

import pytest

from mm2.copy.loop import CopyLoop
from mm2.copy.schema_gate import SchemaGate
from mm2.copy.schema_ids import SchemaIdRewriter
from mm2.copy.schema_map import SchemaIdMap
from mm2.copy.spec import Assignment
from mm2.records.schema_ids import SchemaIdMapping, SchemaSubject
from tests.support.specs import copy_settings, copy_spec
from tests.unit.copy.test_copy_loop import (
    FakeMessage,
    FakeProducer,
    WatermarkConsumer,
    loop_on_fakes,
)


def framed(schema_id: int, body: bytes = b"avro") -> bytes:
    return b"\x00" + schema_id.to_bytes(4, "big") + body


class Framed(FakeMessage):
    def __init__(self, partition: int, offset: int, value: bytes) -> None:
        super().__init__("orders", partition, offset, value)


def arrive(schema_map: SchemaIdMap, *records: SchemaIdMapping | SchemaSubject) -> None:
    """Records of the map as the task's reader of the offsets topic hands them over."""
    for record in records:
        assert schema_map.take(record.key(), record.value())


def _copier(
    wait_ms: int = 60_000, rewriter: SchemaIdRewriter | None = None
) -> tuple[CopyLoop, FakeProducer, SchemaIdMap, WatermarkConsumer]:
    spec = copy_spec(
        transactional=False,
        partitions=[
            Assignment("orders", 0, "primary.orders", 10),
            Assignment("orders", 1, "primary.orders", 10),
        ],
        settings=copy_settings(schema_ids=True, schema_ids_wait_ms=wait_ms),
    )
    feed = SchemaIdMap(
        "mm2-offsets.primary.internal",
        cluster="primary",
        rewriter=rewriter or SchemaIdRewriter({7: 1042}),
    )
    consumer = WatermarkConsumer(0, 100)
    copier, producer = loop_on_fakes(spec, consumer, schemas=SchemaGate(spec, feed))
    return copier, producer, feed, consumer


def _values(producer: FakeProducer) -> list[bytes]:
    return [msg._value for _, msg in producer.unacked]


def test_a_mapped_id_is_rewritten_and_the_rest_stays_byte_for_byte() -> None:
    copier, producer, _, _ = _copier()
    copier._copy([cast(Any, Framed(0, 10, framed(7))), cast(Any, Framed(0, 11, b"plain"))])
    assert _values(producer) == [framed(1042), b"plain"]


def test_an_unmapped_id_holds_its_partition_and_nothing_after_it_is_copied() -> None:
    copier, producer, feed, consumer = _copier()
    copier._copy(
        [
            cast(Any, Framed(0, 10, framed(7))),
            cast(Any, Framed(0, 11, framed(8))),  # schema 8: not on the target yet
            cast(Any, Framed(1, 10, framed(7))),
            cast(Any, Framed(0, 12, framed(7))),  # behind the held record: not copied either
        ]
    )
    assert _values(producer) == [framed(1042), framed(1042)]  # 0@10 and 1@10 only
    assert consumer.seeks == [("unassign", 1, -1)]
    copier._end_transaction()
    assert copier.positions()[("orders", 0)] == 11  # the held record is the next to copy
    assert copier._schemas is not None and copier._schemas.poll() == []  # no news yet
    arrive(feed, SchemaIdMapping("primary", 8, 1043))
    (released,) = copier._schemas.poll()
    assert (released.topic, released.partition, released.offset) == ("orders", 0, 11)
    copier._copy([cast(Any, Framed(0, 11, framed(8)))])
    assert _values(producer)[-1] == framed(1043)


def test_a_record_held_past_the_bound_is_said_once_and_its_partition_stays_held(
    caplog: pytest.LogCaptureFixture,
) -> None:
    copier, producer, _, _ = _copier(wait_ms=0)
    copier._copy([cast(Any, Framed(1, 33, framed(99))), cast(Any, Framed(0, 10, framed(7)))])
    assert copier._schemas is not None
    with caplog.at_level(logging.WARNING, logger="mm2.copy.schema_gate"):
        assert copier._schemas.poll() == [] and copier._schemas.poll() == []
    (said,) = [
        r.getMessage()
        for r in caplog.records
        if r.name == "mm2.copy.schema_gate" and r.levelno >= logging.WARNING
    ]
    assert "orders-1@33 has waited" in said and "the value's schema ID 99" in said
    assert ("orders", 1) in copier._schemas.held
    assert _values(producer) == [framed(1042)]  # the other partition went on


def _by_subject() -> SchemaIdRewriter:
    """A rewriter that reads prefixes only in topics a subject describes: orders' values."""
    rewriter = SchemaIdRewriter(
        {1: 5, 7: 1042}, strategies=("TopicNameStrategy", "TopicNameStrategy")
    )
    rewriter.describe(SchemaSubject("primary", "orders-value", frozenset({7})))
    return rewriter


class Keyed(FakeMessage):
    def __init__(self, topic: str, offset: int, key: bytes, value: bytes) -> None:
        super().__init__(topic, 0, offset, value)
        self._k = key

    def key(self) -> bytes:
        return self._k


def test_keys_and_values_of_topics_no_subject_describes_are_copied_byte_for_byte() -> None:
    """A LongSerializer key 20,000,000 reads as ID 1, which is mapped (to 5); a raw Avro value
    starts with 0x00. Neither topic's keys nor `audit`'s values have a subject."""
    copier, producer, _, _ = _copier(rewriter=_by_subject())
    copier._take([Assignment("audit", 0, "primary.audit", 0)])
    long_key = (20_000_000).to_bytes(8, "big")
    raw_avro = bytes.fromhex("0000000001d20f")
    copier._copy(
        [
            cast(Any, Keyed("orders", 10, long_key, framed(7))),
            cast(Any, Keyed("audit", 0, long_key, raw_avro)),
        ]
    )
    sent = [(msg._key, msg._value) for _, msg in producer.unacked]
    assert sent == [(long_key, framed(1042)), (long_key, raw_avro)]


def test_an_id_no_subject_holds_is_held_and_copied_as_it_is_after_three_passes() -> None:
    copier, producer, feed, _ = _copier(rewriter=_by_subject())
    lookalike = framed(1, b"\x31\x2d\x00")  # ID 1 is mapped, but not one of orders-value's
    copier._copy([cast(Any, Framed(0, 10, lookalike))])
    gate = copier._schemas
    assert gate is not None and gate.held[("orders", 0)][0] == 10
    for passes in (1, 2):  # the first may have begun before the record's schema was, and the
        feed.passes = passes  # count may have been read a pass late
        assert gate.poll() == []
    feed.passes = 3
    (released,) = gate.poll()
    assert (released.partition, released.offset) == (0, 10)
    copier._copy([cast(Any, Framed(0, 10, lookalike)), cast(Any, Framed(0, 11, lookalike))])
    assert _values(producer) == [lookalike, lookalike]  # as they are, no hold again


def test_a_schema_registered_a_moment_ago_waits_for_its_subject_and_is_rewritten() -> None:
    copier, producer, feed, _ = _copier(rewriter=_by_subject())
    copier._copy([cast(Any, Framed(0, 10, framed(8)))])  # orders-value's new version: ID 8
    gate = copier._schemas
    assert gate is not None and ("orders", 0) in gate.held
    arrive(
        feed,
        SchemaIdMapping("primary", 8, 1043),
        SchemaSubject("primary", "orders-value", frozenset({7, 8})),
    )
    feed.passes = 1
    (released,) = gate.poll()
    copier._copy([cast(Any, Framed(0, released.offset, framed(8)))])
    assert _values(producer) == [framed(1043)]


def test_a_flow_without_registries_has_no_gate() -> None:
    assert SchemaGate.open(copy_spec()) is None


def test_partitions_the_planner_marks_as_is_are_never_read_as_framed_records() -> None:
    """The heartbeats topics, as the flow's replication policy names them: the planner marks
    their partitions `as_is`. A topic whose name only looks like one is rewritten as any other."""
    copier, producer, _, _ = _copier()
    copier._take([Assignment("primary.heartbeats", 0, "primary.heartbeats", 0, "", True)])
    copier._take([Assignment("audit.heartbeats", 0, "primary.audit.heartbeats", 0)])
    beat = FakeMessage("primary.heartbeats", 0, 5, b"\x00\x00" + b"\x00" * 20)
    lookalike = FakeMessage("audit.heartbeats", 0, 5, framed(7))
    copier._copy([cast(Any, beat), cast(Any, lookalike)])
    assert _values(producer) == [beat._v, framed(1042)]  # as it came; rewritten
    assert copier._schemas is not None and not copier._schemas.held


def test_news_taken_while_nothing_is_held_releases_no_later_hold() -> None:
    """The gate takes the map's news every round, held partition or not: a mapping that came
    before a hold began (and did not bring its ID) does not release it."""
    copier, _, feed, _ = _copier()
    gate = copier._schemas
    assert gate is not None
    arrive(feed, SchemaIdMapping("primary", 9, 1090))
    assert gate.poll() == []
    copier._copy([cast(Any, Framed(0, 10, framed(8)))])
    assert ("orders", 0) in gate.held
    assert gate.poll() == []  # no news since the hold began
    arrive(feed, SchemaIdMapping("primary", 8, 1043))
    (released,) = gate.poll()
    assert (released.partition, released.offset) == (0, 10)
