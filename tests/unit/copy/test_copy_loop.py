"""How a copy task ends a transaction: the order of its records, its positions, the flush and
the commit, on fake clients injected into the loop and its sink (mm2.copy.loop,
mm2.copy.transaction)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any, cast

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from mm2.copy.failure import CopyTaskFailed
from mm2.copy.loop import CopyLoop, TopicIds
from mm2.copy.position_record import STATS_HEADER
from mm2.copy.refusals import Retries
from mm2.copy.schema_gate import SchemaGate
from mm2.copy.spec import Assignment, CopyTaskSpec
from mm2.copy.stats import CopyStats
from mm2.copy.task import run_copy_task
from mm2.copy.transaction import TransactionSink, producer_settings
from mm2.errors import (
    KafkaClientError,
    ProducerFencedError,
    RecordRefusedError,
    RecordTooLargeError,
)
from mm2.kafka.failure import AuthAlarm
from mm2.offset_syncs.emitter import OffsetSyncEmitter
from tests.support.specs import copy_settings, copy_spec

OFFSETS = "mm2-offsets.primary.internal"


class FakeMessage:
    def __init__(self, topic: str, partition: int, offset: int, value: bytes = b"v") -> None:
        self._t, self._p, self._o, self._v = topic, partition, offset, value

    def error(self) -> None:
        return None

    def topic(self) -> str:
        return self._t

    def partition(self) -> int:
        return self._p

    def offset(self) -> int:
        return self._o

    def value(self) -> bytes:
        return self._v

    def key(self) -> bytes:
        return b"k"

    def timestamp(self) -> tuple[int, int]:
        return (1, 1_700_000_000_000 + self._o)

    def headers(self) -> None:
        return None

    def leader_epoch(self) -> int:
        return 7


class FakeConsumer:
    def __init__(self, config: dict[str, Any]) -> None:
        self.assigned: list[list[Any]] = []

    def assign(self, partitions: list[Any]) -> None:
        self.assigned.append(partitions)

    def get_watermark_offsets(
        self, tp: Any, timeout: float | None = None, cached: bool = False
    ) -> tuple[int, int]:
        return -1001, -1001  # librdkafka's "not known yet" before a fetch answered

    def close(self) -> None:
        pass


class FakeProducer:
    """Records every call; flush delivers what was produced (failing the offsets in `fail`)."""

    calls: list[str]

    def __init__(self, config: dict[str, Any]) -> None:
        self.transactional = "transactional.id" in config
        self.calls = []
        self.headers: list[dict[str, bytes]] = []
        self.unacked: list[tuple[Callable[[KafkaError | None, Any], None] | None, Any]] = []
        self.fail: set[int] = set()
        self.fail_code = KafkaError.MSG_SIZE_TOO_LARGE
        self.next_down = 0

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> None:
        self.calls.append(f"metadata {topic}")

    def init_transactions(self, timeout: float) -> None:
        self.calls.append("init")

    def begin_transaction(self) -> None:
        self.calls.append("begin")

    def produce(self, topic: str, value: bytes, key: bytes, *args: Any, **kw: Any) -> None:
        callback = args[1] if len(args) > 1 else None
        self.calls.append(f"produce {topic}")
        self.headers.append(dict(kw.get("headers") or []))
        self.unacked.append((callback, FakeDelivered(self, value, key)))

    def poll(self, timeout: float) -> int:
        return 0

    def flush(self, timeout: float) -> int:
        self.calls.append("flush")
        for callback, msg in self.unacked:
            if callback is None:
                continue
            upstream = msg.upstream
            err = KafkaError(self.fail_code) if upstream in self.fail else None
            callback(err, msg)
        self.unacked.clear()
        return 0

    def commit_transaction(self) -> None:
        self.calls.append("commit")

    def abort_transaction(self, timeout: float) -> None:
        self.calls.append("abort")


class FakeDelivered:
    def __init__(self, producer: FakeProducer, value: bytes, key: bytes) -> None:
        self.upstream = int(value) if value.isdigit() else -1
        self._offset = producer.next_down
        producer.next_down += 1
        self._value, self._key = value, key

    def offset(self) -> int:
        return self._offset

    def value(self) -> bytes:
        return self._value

    def key(self) -> bytes:
        return self._key

    def timestamp(self) -> tuple[int, int]:
        return (1, 1_700_000_000_000 + max(self.upstream, 0))


def loop_on_fakes(
    spec: CopyTaskSpec,
    consumer: FakeConsumer,
    *,
    topic_ids: TopicIds | None = None,
    schemas: SchemaGate | None = None,
) -> tuple[CopyLoop, FakeProducer]:
    """A copy loop of `spec` on fake clients (the producer stands in for confluent-kafka's);
    its producer."""
    producer = FakeProducer(producer_settings(spec))
    copier = CopyLoop(
        spec,
        consumer=cast(Any, consumer),
        alarm=AuthAlarm("primary"),
        sink=TransactionSink(spec, cast(Any, producer), AuthAlarm("backup")),
        syncs=OffsetSyncEmitter("", None, 100),
        offsets=None,
        schemas=schemas,
        topic_ids=topic_ids,
    )
    return copier, producer


def _copier(
    transactional: bool, skip_oversized: bool = False, limits: dict[str, int] | None = None
) -> CopyLoop:
    spec = copy_spec(
        transactional=transactional,
        partitions=[Assignment("orders", 0, "primary.orders", 10)],
        offsets_topic=OFFSETS,
        settings=copy_settings(skip_oversized_records=skip_oversized),
        topic_limits=limits or {},
    )
    return loop_on_fakes(spec, FakeConsumer({}))[0]


def _copy(copier: CopyLoop, offsets: list[int]) -> FakeProducer:
    messages: list[Any] = [FakeMessage("orders", 0, o, str(o).encode()) for o in offsets]
    copier._copy(messages)
    producer = copier._sink._producer
    assert isinstance(producer, FakeProducer)
    return producer


def test_in_a_transaction_positions_go_out_with_the_records_before_the_flush() -> None:
    copier = _copier(transactional=True)
    producer = _copy(copier, [10, 11, 12])
    copier._end_transaction()
    assert producer.calls == [
        f"metadata {OFFSETS}",  # the brokers learned first: InitProducerId goes to them
        "init",
        "begin",
        "produce primary.orders",
        "produce primary.orders",
        "produce primary.orders",
        f"produce {OFFSETS}",
        "flush",
        "commit",
    ]
    assert copier.positions() == {("orders", 0): 13}


def test_a_position_carries_the_source_end_the_consumer_last_saw() -> None:
    copier = _copier(transactional=True)
    copier._consumer = cast(Any, WatermarkConsumer(0, 40))  # its latest fetch: the end is 40
    producer = _copy(copier, [10, 11, 12])
    copier._end_transaction()
    (raw,) = [h[STATS_HEADER] for h in producer.headers if STATS_HEADER in h]
    stats = CopyStats.from_header(raw, topic="orders", partition=0, target_topic="", position=12)
    assert stats is not None and stats.source_end == 40 and stats.source_end_ms > 0


def test_a_transaction_that_leaves_a_backlog_lets_the_next_one_grow_and_caught_up_not() -> None:
    copier = _copier(transactional=True)
    interval = copier.spec.settings.transaction_boundary_interval_ms
    copier._consumer = cast(Any, WatermarkConsumer(0, 40))  # 27 left after offset 12
    _copy(copier, [10, 11, 12])
    copier._end_transaction()
    assert copier._behind  # 27 still to read, 3 copied
    assert copier._boundary.current_ms >= interval
    copier._boundary.ended(ending_ms=interval, behind=copier._behind)  # a slow ending
    assert copier._boundary.current_ms > interval
    copier._consumer = cast(Any, WatermarkConsumer(0, 16))  # caught up after offset 15
    _copy(copier, [13, 14, 15])
    copier._end_transaction()
    assert not copier._behind and copier._boundary.current_ms == interval


def test_a_failed_record_aborts_the_positions_with_the_records() -> None:
    copier = _copier(transactional=True, skip_oversized=True)
    producer = _copy(copier, [10, 11, 12])
    producer.fail = {11}
    copier._end_transaction()
    assert "commit" not in producer.calls
    assert producer.calls[-2:] == ["flush", "abort"]
    assert copier.positions() == {("orders", 0): 10}  # read again from the last commit
    consumer = copier._consumer
    assert isinstance(consumer, FakeConsumer)
    assert len(consumer.assigned) == 1  # assigned again (run() assigns the first time)


class HoldingProducer(FakeProducer):
    """librdkafka after a refused record in a transaction: the refusal is delivered, the records
    behind it are held (never sent, never failed) until message.timeout.ms."""

    def flush(self, timeout: float) -> int:
        self.calls.append(f"flush {timeout}")
        held: list[tuple[Callable[[KafkaError | None, Any], None] | None, Any]] = []
        refused = False
        for callback, msg in self.unacked:
            if refused:
                held.append((callback, msg))
                continue
            refused = msg.upstream in self.fail
            if callback is not None:
                callback(KafkaError(self.fail_code) if refused else None, msg)
        self.unacked = held
        return len(held)


def test_a_skipped_oversized_record_ends_its_transaction_at_once_not_after_the_timeout() -> None:
    spec = _copier(transactional=True, skip_oversized=True).spec
    copier, _ = loop_on_fakes(spec, FakeConsumer({}))
    producer = HoldingProducer(producer_settings(spec))
    copier._sink = TransactionSink(spec, cast(Any, producer), AuthAlarm("backup"))
    copier._copy(cast(Any, [FakeMessage("orders", 0, o, str(o).encode()) for o in (10, 11, 12)]))
    producer.fail = {11}
    waits: list[str] = []
    copier._copy_again_after = lambda cause, wait: waits.append(cause)  # type: ignore[method-assign]
    copier._end_transaction()
    # One short flush found the refusal: no wait for the records held behind it.
    flushes = [c for c in producer.calls if c.startswith("flush")]
    assert flushes == ["flush 0.2"], producer.calls
    assert producer.calls[-1] == "abort" and "commit" not in producer.calls
    assert copier._skip == {("orders", 0, 11)}  # skipped on the copy again, at once
    assert waits == []
    assert copier.positions() == {("orders", 0): 10}


def test_without_a_transaction_positions_follow_the_acknowledged_records() -> None:
    copier = _copier(transactional=False)
    producer = _copy(copier, [10, 11])
    copier._end_transaction()
    assert producer.calls == [
        "produce primary.orders",
        "produce primary.orders",
        "flush",
        f"produce {OFFSETS}",
        "flush",
    ]
    assert copier.positions() == {("orders", 0): 12}


def test_offset_syncs_see_the_acknowledged_offsets(monkeypatch: pytest.MonkeyPatch) -> None:
    copier = _copier(transactional=True)
    _copy(copier, [10, 11, 12])
    emitted: list[Any] = []

    def emit(results: list[Any], *, wait: bool = True) -> None:
        emitted.extend(results)

    monkeypatch.setattr(copier._syncs, "emit", emit)
    copier._end_transaction()
    (result,) = emitted
    assert result.runs and result.runs[0][:2] == (10, 0)


class FencedProducer(FakeProducer):
    """A producer a newer holder of its id fenced: produce raises, and so does every flush, the
    way confluent-kafka does from inside a delivery callback (a SystemError over the error)."""

    def produce(self, topic: str, value: bytes, key: bytes, *args: Any, **kw: Any) -> None:
        raise KafkaException(KafkaError(KafkaError._FENCED, "fenced", fatal=True))

    def flush(self, timeout: float) -> int:
        try:
            raise KafkaException(KafkaError(KafkaError._FENCED, "fenced", fatal=True))
        except KafkaException as exc:
            raise SystemError("<built-in function len> returned a result") from exc


def _fenced_copier() -> CopyLoop:
    copier = _copier(transactional=True)
    fenced: Any = FencedProducer(producer_settings(copier.spec))
    copier._sink = TransactionSink(copier.spec, fenced, AuthAlarm("backup"))
    return copier


def test_a_fenced_produce_ends_the_loop_as_fenced_not_as_an_unknown_error() -> None:
    copier = _fenced_copier()
    copier._consumer = cast(Any, OneBatchConsumer([FakeMessage("orders", 0, 10, b"10")]))
    with pytest.raises(ProducerFencedError, match="fenced by a newer holder"):
        copier.run()


def test_closing_a_failed_task_reports_the_error_that_ended_it() -> None:
    copier = _fenced_copier()
    copier._consumer = cast(Any, OneBatchConsumer([FakeMessage("orders", 0, 10, b"10")]))
    spec = copier.spec
    with pytest.raises(CopyTaskFailed) as failed:
        run_copy_task(spec, attempt=0, positions=None, open_loop=lambda _spec: copier)
    assert failed.value.failure.kind == ProducerFencedError.kind, failed.value.failure


class OneBatchConsumer(FakeConsumer):
    def __init__(self, messages: list[Any]) -> None:
        super().__init__({})
        self._messages = messages

    def consume(self, count: int, timeout: float) -> list[Any]:
        batch, self._messages = self._messages, []
        return batch


def test_a_record_the_target_refuses_for_good_ends_the_task_naming_it_and_the_reason() -> None:
    copier = _copier(transactional=True)
    producer = _copy(copier, [10, 11, 12])
    producer.fail, producer.fail_code = {11}, KafkaError.INVALID_TIMESTAMP
    refused = r"orders-0@11 for primary.orders: .*timestamp is 2023-11-14T22:13:20Z"
    with pytest.raises(RecordRefusedError, match=refused):
        copier._end_transaction()
    assert producer.calls[-2:] == ["flush", "abort"]  # no transaction left open behind it
    assert "commit" not in producer.calls


def test_a_record_refused_with_its_batch_is_copied_again_never_blamed() -> None:
    copier = _copier(transactional=True, limits={"primary.orders": 512_000})
    producer = _copy(copier, [10, 11])
    producer.fail = {10, 11}  # the whole batch refused as too large; each record is 2 bytes
    copier._end_transaction()
    assert producer.calls[-2:] == ["flush", "abort"]
    assert copier.positions() == {("orders", 0): 10}  # read again, nothing skipped
    assert not copier._skip


def test_a_record_larger_than_its_topic_accepts_is_named_with_the_limit() -> None:
    copier = _copier(transactional=True, limits={"primary.orders": 1})
    producer = _copy(copier, [10, 11])
    producer.fail = {11}
    with pytest.raises(RecordTooLargeError, match=r"orders-0@11 \(3 bytes\).*\(1 bytes;"):
        copier._end_transaction()


def test_a_produce_into_a_failed_transaction_aborts_it_and_copies_again() -> None:
    copier = _copier(transactional=True)
    producer = _copy(copier, [10])
    producer.fail, producer.fail_code = {10}, KafkaError.NOT_ENOUGH_REPLICAS

    def refuse(*args: Any, **kw: Any) -> None:
        raise KafkaException(KafkaError(KafkaError._STATE, "Erroneous state"))

    consumer = OneBatchConsumer([FakeMessage("orders", 0, 11, b"11")])
    copier._consumer = cast(Any, consumer)
    copier._sink.produce = refuse
    copier._round()  # the produce fails: the transaction is ended, aborted, assigned again
    assert "abort" in producer.calls and "commit" not in producer.calls
    assert copier.positions() == {("orders", 0): 10}
    assert consumer.assigned  # back to the committed positions


def test_retries_wait_longer_each_time_and_give_up_when_nothing_commits() -> None:
    now = [0.0]
    retries = Retries(
        "primary->backup task 0", first=0.1, cap=0.4, give_up_s=60, clock=lambda: now[0]
    )
    assert [retries.failed("x") for _ in range(4)] == [0.1, 0.2, 0.4, 0.4]
    retries.succeeded()
    assert retries.failed("x") == 0.1
    now[0] = 61.0
    with pytest.raises(
        KafkaClientError, match="nothing committed for 61 s; last: broker down"
    ) as e:
        retries.failed("broker down")
    assert e.value.retriable


def test_batches_stay_within_the_smallest_remote_topic_limit() -> None:
    spec = _copier(transactional=True, limits={"primary.orders": 512_000}).spec
    assert producer_settings(spec)["batch.size"] == 512_000
    # and never creates a deleted remote or offsets topic with the broker's defaults
    assert producer_settings(spec)["allow.auto.create.topics"] is False
    assert producer_settings(_copier(transactional=True).spec)["batch.size"] == 1_000_000


def test_the_producer_lingers_10_ms_unless_the_operator_says_otherwise() -> None:
    spec = _copier(transactional=True).spec
    assert producer_settings(spec)["linger.ms"] == 10
    settings = replace(spec.settings, target_producer={"linger.ms": "2"})
    assert producer_settings(replace(spec, settings=settings))["linger.ms"] == "2"


class IdleConsumer(FakeConsumer):
    """Nothing more to read; its position is past what it handed over (markers, aborts)."""

    def __init__(self, positions: dict[tuple[str, int], int]) -> None:
        super().__init__({})
        self.positions = positions

    def consume(self, count: int, timeout: float) -> list[Any]:
        return []

    def position(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        return [
            TopicPartition(
                tp.topic, tp.partition, self.positions.get((tp.topic, tp.partition), -1001)
            )
            for tp in partitions
        ]


def test_an_idle_partition_moves_past_transaction_markers_in_a_transaction_of_positions() -> None:
    copier = _copier(transactional=True)  # orders-0 copied up to 9: the next offset is 10
    producer = copier._sink._producer
    assert isinstance(producer, FakeProducer)
    copier._consumer = cast(Any, IdleConsumer({("orders", 0): 13}))  # 10-12: markers, aborts
    copier._round()
    assert producer.calls[-4:] == ["begin", f"produce {OFFSETS}", "flush", "commit"]
    assert copier.positions() == {("orders", 0): 13}
    calls = len(producer.calls)
    copier._markers_due = 0.0
    copier._round()  # nothing past the position now: no transaction
    assert len(producer.calls) == calls


def _beats_and_orders() -> tuple[CopyLoop, FakeProducer]:
    beats = Assignment("heartbeats", 0, "primary.heartbeats", 5, heartbeats=True)
    partitions = [beats, Assignment("orders", 0, "primary.orders", 10)]
    spec = copy_spec(partitions=partitions, offsets_topic=OFFSETS)
    return loop_on_fakes(spec, IdleConsumer({}))


def _older(copier: CopyLoop, seconds: float) -> None:
    assert copier._txn is not None
    copier._txn.opened -= seconds


def test_heartbeats_alone_wait_a_second_for_company_and_any_other_record_ends_the_wait() -> None:
    copier, producer = _beats_and_orders()
    copier._copy([cast(Any, FakeMessage("heartbeats", 0, 5, b"5"))])
    _older(copier, 0.5)  # nothing more to read, well past the 10 ms a record of data waits
    copier._round()
    assert "commit" not in producer.calls
    copier._copy([cast(Any, FakeMessage("heartbeats", 0, 6, b"6"))])  # one transaction
    _older(copier, 0.6)
    copier._round()
    assert producer.calls.count("commit") == 1
    assert copier.positions()[("heartbeats", 0)] == 7

    copier._copy([cast(Any, FakeMessage("heartbeats", 0, 7, b"7"))])
    copier._copy([cast(Any, FakeMessage("orders", 0, 10, b"10"))])
    _older(copier, 0.02)
    copier._round()  # a record of data: committed once nothing more is to read
    assert producer.calls.count("commit") == 2
    assert copier.positions() == {("heartbeats", 0): 8, ("orders", 0): 11}


def test_an_idle_partition_moves_past_markers_while_heartbeats_wait() -> None:
    copier, producer = _beats_and_orders()  # orders-0: next offset 10
    copier._consumer = cast(Any, IdleConsumer({("heartbeats", 0): 6}))
    copier._copy([cast(Any, FakeMessage("heartbeats", 0, 5, b"5"))])
    copier._round()  # nothing past orders-0's next offset: the heartbeats wait on
    assert "commit" not in producer.calls
    copier._consumer = cast(Any, IdleConsumer({("heartbeats", 0): 6, ("orders", 0): 13}))
    copier._markers_due = 0.0
    copier._round()  # orders-0's 10-12 are markers: the heartbeats end first, then it moves
    assert producer.calls.count("commit") == 2
    assert copier.positions() == {("heartbeats", 0): 6, ("orders", 0): 13}


def test_a_pause_between_fetches_does_not_end_a_transaction_a_longer_one_does() -> None:
    spec = copy_spec(partitions=[Assignment("orders", 0, "primary.orders", 10)])
    copier, producer = loop_on_fakes(spec, IdleConsumer({}))
    copier._copy([cast(Any, FakeMessage("orders", 0, 10, b"10"))])
    _older(copier, 0.05)  # past the 10 ms a record of data waits at the least
    # A record came just now (set ahead, so that a stall of this machine cannot age it).
    copier._last_record = time.monotonic() + 1.0
    copier._round()
    assert "commit" not in producer.calls
    copier._last_record -= 1.011  # nothing for longer than a fetch may be held (5 ms) + a round
    copier._round()
    assert producer.calls.count("commit") == 1
    assert copier.positions()[("orders", 0)] == 11


def test_a_round_that_took_records_never_ends_the_transaction_early() -> None:
    spec = copy_spec(partitions=[Assignment("orders", 0, "primary.orders", 10)])
    copier, producer = loop_on_fakes(spec, OneBatchConsumer([FakeMessage("orders", 0, 10, b"10")]))
    copier._copy([cast(Any, FakeMessage("orders", 0, 9, b"9"))])
    _older(copier, 0.05)
    produce = copier._sink.produce

    def slow(*args: Any, **kw: Any) -> None:  # copying a backlog's batch takes a while
        time.sleep(0.02)
        produce(*args, **kw)

    copier._sink.produce = slow
    copier._round()  # records taken this round: the next may bring more at once
    assert "commit" not in producer.calls
    copier._last_record -= 0.011
    copier._markers_due = float("inf")  # (moving past markers once idle: another test's)
    copier._round()  # nothing this round, nothing for longer than the gap: ends
    assert producer.calls.count("commit") == 1


def test_a_round_waits_for_records_as_long_as_nothing_is_due() -> None:
    copier, _ = _beats_and_orders()
    assert copier._record_wait(None) == 0.5  # idle: a record ends the wait anyway
    copier._copy([cast(Any, FakeMessage("heartbeats", 0, 5, b"5"))])
    _older(copier, 0.8)
    assert 0.005 <= copier._record_wait(copier._txn) <= 0.2  # until the heartbeats are due
    _older(copier, 5.0)
    assert copier._record_wait(copier._txn) == 0.005
    copier._copy([cast(Any, FakeMessage("orders", 0, 10, b"10"))])
    assert copier._record_wait(copier._txn) == 0.005  # data: look again at once


def test_a_partition_not_read_yet_has_no_position_to_move_to() -> None:
    copier = _copier(transactional=True)
    copier._consumer = cast(Any, IdleConsumer({}))
    copier._round()
    assert copier.positions() == {("orders", 0): 10}


class OutOfRange(FakeMessage):
    """librdkafka's error for a fetch at an offset the log no longer has (auto.offset.reset is
    `error` in the copy task's consumer)."""

    def error(self) -> KafkaError:  # type: ignore[override]
        return KafkaError(KafkaError._AUTO_OFFSET_RESET, "Offset out of range")


class WatermarkConsumer(FakeConsumer):
    def __init__(self, low: int, high: int) -> None:
        super().__init__({})
        self.low, self.high = low, high
        self.seeks: list[tuple[str, int, int]] = []

    def get_watermark_offsets(
        self, tp: Any, timeout: float | None = None, cached: bool = False
    ) -> tuple[int, int]:
        return self.low, self.high

    def incremental_unassign(self, partitions: list[Any]) -> None:
        self.seeks.append(("unassign", len(partitions), -1))

    def incremental_assign(self, partitions: list[Any]) -> None:
        self.seeks.extend((tp.topic, tp.partition, tp.offset) for tp in partitions)


@pytest.mark.parametrize(
    ("low", "high", "resume", "gone", "truncated"),
    [
        (500, 900, 500, 490, 0),  # offsets 10-499 deleted before they were copied
        (2, 4, 2, 0, 1),  # the log now ends at 4, below the position 10: again from its start
        (0, 900, 10, 0, 0),  # in range after all (a race): read again where it was
    ],
)
def test_an_offset_the_source_no_longer_has_is_judged_and_counted_never_reset_silently(
    low: int, high: int, resume: int, gone: int, truncated: int, caplog: pytest.LogCaptureFixture
) -> None:
    copier = _copier(transactional=True)
    consumer = WatermarkConsumer(low, high)
    copier._consumer = cast(Any, consumer)
    emitted: list[Any] = []
    copier._syncs.emit = lambda results, *, wait=True: emitted.extend(results)  # type: ignore[method-assign]
    copier._copy([cast(Any, OutOfRange("orders", 0, 10))])
    assert consumer.seeks == [("unassign", 1, -1), ("orders", 0, resume)]
    copier._end_transaction()
    if gone or truncated:
        (stats,) = emitted
        assert (stats.gone, stats.truncated, stats.position) == (gone, truncated, resume - 1)
        assert copier.positions() == {("orders", 0): resume}  # committed at once
        assert "copying on from the log start" in caplog.text or "again from the log" in caplog.text
    else:
        assert emitted == [] and copier.positions() == {("orders", 0): 10}


def test_a_position_carries_the_leader_epoch_of_its_record_and_the_next_start_asks_with_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    copier = _copier(transactional=True)
    written: list[tuple[int, int | None]] = []
    real = copier._sink.write_position

    def write_position(stats: Any, topic_id: str | None = None, epoch: int | None = None) -> None:
        written.append((stats.position, epoch))
        real(stats, topic_id, epoch)

    monkeypatch.setattr(copier._sink, "write_position", write_position)
    _copy(copier, [10, 11])
    copier._end_transaction()
    assert written == [(11, 7)]  # the epoch of record 11, the one the position follows
    start = copier._start("orders", 0, copier.positions()[("orders", 0)])
    assert (start.offset, start.leader_epoch) == (12, 7)  # librdkafka validates it first
    # A partition whose position carries no epoch starts by offset only.
    assert copier._start("orders", 1, 5).leader_epoch is None


def test_a_truncation_found_by_the_leader_epoch_copies_the_log_again_from_its_start(
    caplog: pytest.LogCaptureFixture,
) -> None:
    copier = _copier(transactional=True)
    consumer = WatermarkConsumer(3, 900)  # refilled past the position 10 since it was cut

    class Truncated(FakeMessage):
        def error(self) -> KafkaError:  # type: ignore[override]
            return KafkaError(KafkaError._LOG_TRUNCATION, "Partition log truncation detected")

    copier._consumer = cast(Any, consumer)
    copier._copy([cast(Any, Truncated("orders", 0, 10))])
    assert consumer.seeks == [("unassign", 1, -1), ("orders", 0, 3)]
    copier._end_transaction()
    assert copier.positions() == {("orders", 0): 3}
    assert "truncated below the position 10" in caplog.text


class HoldingGate:
    """A schema gate holding orders-0 at offset 10 (its schema not mirrored yet)."""

    def __init__(self) -> None:
        self.held: dict[tuple[str, int], tuple[int, object]] = {("orders", 0): (10, None)}

    def poll(self) -> list[TopicPartition]:
        return []

    def close(self) -> None:
        pass


def test_a_held_partition_never_moves_past_its_held_record() -> None:
    copier = _copier(transactional=True)
    producer = copier._sink._producer
    assert isinstance(producer, FakeProducer)
    # unassigned at its held record 10 with the rest of its batch handed over: position 13
    copier._consumer = cast(Any, IdleConsumer({("orders", 0): 13}))
    copier._schemas = cast(Any, HoldingGate())
    calls = len(producer.calls)
    copier._round()
    assert copier.positions() == {("orders", 0): 10}  # still the held record's
    assert len(producer.calls) == calls  # no transaction of positions


def test_a_truncation_found_mid_transaction_moves_the_position_back_to_the_log_start() -> None:
    copier = _copier(transactional=True)
    _copy(copier, [10, 11])  # in the open transaction: position 11
    copier._consumer = cast(Any, WatermarkConsumer(2, 4))  # the log now ends at 4
    emitted: list[Any] = []
    copier._syncs.emit = lambda results, *, wait=True: emitted.extend(results)  # type: ignore[method-assign]
    copier._copy([cast(Any, OutOfRange("orders", 0, 12))])
    copier._end_transaction()
    (stats,) = emitted
    # copied again from the log start (duplicates, never a skip), not resumed after 11
    assert (stats.truncated, stats.position) == (1, 1)
    assert copier.positions() == {("orders", 0): 2}


class SourceIds:
    """The source's topic ids as TopicAdmin.ask_topic_ids answers them, each request and
    answer noted in `calls` (the producer's, to see them beside the flush and the commit)."""

    def __init__(self, calls: list[str], ids: dict[str, str]) -> None:
        self.calls, self.ids = calls, ids
        self.failure: KafkaClientError | None = None

    def ask_topic_ids(self, topics: Any) -> Callable[[], dict[str, str]]:
        names = sorted(topics)
        self.calls.append(f"ask {','.join(names)}")

        def answer() -> dict[str, str]:
            self.calls.append("answer")
            if self.failure is not None:
                raise self.failure
            return {t: self.ids[t] for t in names if t in self.ids}

        return answer


class AssignedConsumer(WatermarkConsumer):
    """Knows what it is assigned (the copy loop asks before it unassigns)."""

    def __init__(self, low: int, high: int, assigned: list[tuple[str, int]]) -> None:
        super().__init__(low, high)
        self.now = [TopicPartition(t, p) for t, p in assigned]

    def assignment(self) -> list[TopicPartition]:
        return self.now


def _dealt(transactional: bool, ids: dict[str, str]) -> tuple[CopyLoop, FakeProducer, SourceIds]:
    """A copy task dealt orders-0, orders-1 (topic id "A") and payments-0 (topic id "P"); the
    source answers `ids`."""
    spec = copy_spec(
        transactional=transactional,
        partitions=[
            Assignment("orders", 0, "primary.orders", 10, "A"),
            Assignment("orders", 1, "primary.orders", 20, "A"),
            Assignment("payments", 0, "primary.payments", 5, "P"),
        ],
        offsets_topic=OFFSETS,
    )
    source = SourceIds([], ids)
    copier, producer = loop_on_fakes(spec, FakeConsumer({}), topic_ids=source)
    source.calls = producer.calls  # the source's answers beside the flush and the commit
    return copier, producer, source


def _records(copier: CopyLoop, topic: str, partition: int, offsets: list[int]) -> None:
    copier._copy([cast(Any, FakeMessage(topic, partition, o, str(o).encode())) for o in offsets])


def test_a_commit_waits_for_the_source_to_say_the_topics_are_the_ones_dealt() -> None:
    copier, producer, _ = _dealt(True, {"orders": "A", "payments": "P"})
    _records(copier, "orders", 0, [10, 11])
    _records(copier, "payments", 0, [5])
    copier._end_transaction()
    # asked once the records were read, answered while the flush ran: the commit follows it
    assert producer.calls[-6:] == [
        "ask orders,payments",
        f"produce {OFFSETS}",
        f"produce {OFFSETS}",
        "flush",
        "answer",
        "commit",
    ]
    assert copier.positions()[("orders", 0)] == 12
    assert copier.positions()[("payments", 0)] == 6


def test_records_of_a_topic_deleted_and_created_again_are_never_committed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    copier, producer, _ = _dealt(True, {"orders": "B", "payments": "P"})
    consumer = copier._consumer
    assert isinstance(consumer, FakeConsumer)
    # librdkafka read on at the old topic's position: these are the new topic's records
    _records(copier, "orders", 0, [10, 11])
    _records(copier, "payments", 0, [5])
    with caplog.at_level(logging.INFO):
        copier._end_transaction()
    assert producer.calls[-3:] == ["flush", "answer", "abort"] and "commit" not in producer.calls
    assert copier.positions() == {("orders", 0): 10, ("orders", 1): 20, ("payments", 0): 5}
    # every partition of the topic is left to the planner; the others are read again
    assert [(tp.topic, tp.partition, tp.offset) for tp in consumer.assigned[-1]] == [
        ("payments", 0, 5)
    ]
    assert "source topic orders was deleted and created again (topic id B, copied as A)" in (
        caplog.text
    )
    # A record of it still on its way is not committed either, and nothing more is asked.
    calls = len(producer.calls)
    _records(copier, "orders", 1, [20])
    copier._end_transaction()
    assert producer.calls[calls:][-2:] == ["flush", "abort"]
    assert not any(c.startswith("ask") for c in producer.calls[calls:])
    assert copier.positions()[("orders", 1)] == 20


def test_without_a_transaction_only_the_other_partitions_positions_are_written() -> None:
    copier, producer, _ = _dealt(False, {"orders": "B", "payments": "P"})
    _records(copier, "orders", 0, [10, 11])
    _records(copier, "payments", 0, [5, 6])
    copier._end_transaction()
    # the records are on the target already; only payments-0's position is written
    assert producer.calls.count(f"produce {OFFSETS}") == 1
    assert copier.positions() == {("orders", 0): 10, ("orders", 1): 20, ("payments", 0): 7}
    consumer = copier._consumer
    assert isinstance(consumer, FakeConsumer)
    assert [(tp.topic, tp.offset) for tp in consumer.assigned[-1]] == [("payments", 7)]


def test_a_topic_deleted_and_not_created_again_yet_commits_what_was_read_before() -> None:
    copier, producer, _ = _dealt(True, {"payments": "P"})  # orders is gone from the source
    _records(copier, "orders", 0, [10, 11])
    copier._end_transaction()
    assert producer.calls[-1] == "commit"
    assert copier.positions()[("orders", 0)] == 12


def test_a_partition_of_an_unknown_topic_id_is_not_asked_about() -> None:
    copier, producer, _ = _dealt(True, {})
    copier._assigned[("orders", 0)] = Assignment("orders", 0, "primary.orders", 10, "")
    _records(copier, "orders", 0, [10])
    copier._end_transaction()
    assert not any(c.startswith("ask") for c in producer.calls)
    assert producer.calls[-1] == "commit"


def test_without_an_answer_from_the_source_nothing_is_committed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    copier, producer, source = _dealt(True, {"orders": "A"})
    source.failure = KafkaClientError("primary: describing topic orders timed out", retriable=True)
    slept: list[float] = []
    monkeypatch.setattr("mm2.copy.loop.time.sleep", slept.append)
    _records(copier, "orders", 0, [10, 11])
    copier._end_transaction()
    assert producer.calls[-3:] == ["flush", "answer", "abort"]
    assert copier.positions()[("orders", 0)] == 10 and slept == [0.1]
    consumer = copier._consumer
    assert isinstance(consumer, FakeConsumer) and len(consumer.assigned) == 1  # copied again
    assert not copier._left  # not taken for a new topic


def test_a_new_topic_shorter_than_the_position_is_left_not_taken_for_a_truncation(
    caplog: pytest.LogCaptureFixture,
) -> None:
    copier, producer, _ = _dealt(True, {"orders": "B", "payments": "P"})
    consumer = AssignedConsumer(0, 4, [("orders", 0), ("orders", 1), ("payments", 0)])
    copier._consumer = cast(Any, consumer)
    _records(copier, "payments", 0, [5])
    copier._copy([cast(Any, OutOfRange("orders", 0, 10))])
    assert consumer.seeks == [("unassign", 2, -1)]  # both partitions of orders, nothing resumed
    assert "truncated" not in caplog.text
    assert set(copier._left) == {("orders", 0), ("orders", 1)}
    copier._end_transaction()  # no position of orders in it: it is the new topic's log
    assert producer.calls[-1] == "commit" and producer.calls.count(f"produce {OFFSETS}") == 1
    assert copier.positions() == {("orders", 0): 10, ("orders", 1): 20, ("payments", 0): 6}
