"""The copy loop with a flow's schema-ID map (mm2.copy.schema_gate): IDs rewritten inside the
transaction, a partition held at its first record whose schema is not mirrored yet (never
copied with the source's ID), released when the map has news, and a bound that ends the task
naming the record."""

from __future__ import annotations

from typing import Any, cast

import pytest

from mm2.copy.loop import CopyLoop
from mm2.copy.schema_gate import SchemaGate
from mm2.copy.schema_ids import SchemaIdRewriter
from mm2.copy.spec import Assignment
from mm2.copy.transaction import TransactionSink, producer_settings
from mm2.errors import SchemaNotMirroredError
from mm2.kafka.failure import AuthAlarm
from mm2.offset_syncs.emitter import OffsetSyncEmitter
from mm2.records.schema_ids import SchemaIdMapping
from tests.support.specs import copy_spec
from tests.unit.copy.test_copy_loop import FakeMessage, FakeProducer, WatermarkConsumer


def framed(schema_id: int, body: bytes = b"avro") -> bytes:
    return b"\x00" + schema_id.to_bytes(4, "big") + body


class Framed(FakeMessage):
    def __init__(self, partition: int, offset: int, value: bytes) -> None:
        super().__init__("orders", partition, offset, value)


class FakeFeed:
    """SchemaIdFeed's surface: a real rewriter, and mappings that arrive when told."""

    def __init__(self) -> None:
        self.rewriter = SchemaIdRewriter({7: 1042})
        self.arriving: list[SchemaIdMapping] = []

    def catch_up(self, timeout: float = 30.0) -> int:
        return 1

    def poll(self) -> int:
        taken, self.arriving = self.arriving, []
        for mapping in taken:
            self.rewriter.learn(mapping)
        return len(taken)

    def close(self) -> None:
        pass


def _copier(wait_ms: int = 60_000) -> tuple[CopyLoop, FakeProducer, FakeFeed, WatermarkConsumer]:
    spec = copy_spec(
        transactional=False,
        partitions=[
            Assignment("orders", 0, "primary.orders", 10),
            Assignment("orders", 1, "primary.orders", 10),
        ],
        schema_ids=True,
        schema_wait_ms=wait_ms,
    )
    producer = FakeProducer(producer_settings(spec))
    feed = FakeFeed()
    consumer = WatermarkConsumer(0, 100)
    copier = CopyLoop(
        spec,
        consumer=cast(Any, consumer),
        alarm=AuthAlarm("primary"),
        sink=TransactionSink(spec, cast(Any, producer), AuthAlarm("backup")),
        syncs=OffsetSyncEmitter("", None, 100),
        feed=None,
        schemas=SchemaGate(spec, cast(Any, feed)),
    )
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
    feed.arriving.append(SchemaIdMapping("primary", 8, 1043))
    (released,) = copier._schemas.poll()
    assert (released.topic, released.partition, released.offset) == ("orders", 0, 11)
    copier._copy([cast(Any, Framed(0, 11, framed(8)))])
    assert _values(producer)[-1] == framed(1043)


def test_a_record_held_past_the_bound_ends_the_task_naming_it() -> None:
    copier, _, _, _ = _copier(wait_ms=0)
    copier._copy([cast(Any, Framed(1, 33, framed(99)))])
    assert copier._schemas is not None
    with pytest.raises(SchemaNotMirroredError, match=r"orders-1@33: the value's schema ID 99"):
        copier._schemas.poll()


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
