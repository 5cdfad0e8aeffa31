"""Copy offset ranges of source partitions to the same partitions of target topics."""

from __future__ import annotations

import gc
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from confluent_kafka import Consumer, KafkaError, Message, Producer, TopicPartition

from mm2.errors import KafkaClientError, RecordTooLargeError
from mm2.offsets.sync_trail import offset_runs

__all__ = ["Copier", "CopyResult", "WorkUnit"]

_CONSUME_BATCH = 10_000


@dataclass(frozen=True)
class WorkUnit:
    """Records [start, until) of one source partition, for the same partition of target_topic."""

    topic: str
    partition: int
    start: int
    until: int
    target_topic: str


@dataclass
class CopyResult:
    """What copying one work unit did: counts, (upstream, downstream, length) runs and latency."""

    unit: WorkUnit
    records: int = 0
    bytes: int = 0
    skipped: int = 0
    runs: list[tuple[int, int, int]] = field(default_factory=list)
    min_timestamp: int = -1
    max_timestamp: int = -1
    sum_timestamp: int = 0
    finished_ms: int = 0
    # record-age-ms: how old records were when the copier read them (now - record timestamp).
    age_min_ms: int = -1
    age_max_ms: int = -1
    age_sum_ms: int = 0


class _PartitionCopy:
    """Book-keeping for one unit while its records are in flight."""

    __slots__ = ("deliver", "done", "downstream", "failures", "result", "unit", "upstream")

    def __init__(self, unit: WorkUnit) -> None:
        self.unit = unit
        self.result = CopyResult(unit)
        self.upstream: list[int] = []
        self.downstream: list[int] = []
        # (index in send order, error, key + value bytes) of each record the target refused.
        self.failures: list[tuple[int, KafkaError, int]] = []
        self.done = unit.start >= unit.until
        self.deliver = self.on_delivery  # bound once, not per record

    def on_delivery(self, err: KafkaError | None, msg: Message) -> None:
        # Idempotent producer: reports for one partition arrive in send order.
        if err is None:
            self.downstream.append(_offset(msg))
        else:
            index = len(self.downstream) + len(self.failures)
            value, key = msg.value(), msg.key()
            self.failures.append((index, err, len(value or b"") + len(key or b"")))


def _offset(msg: Message) -> int:
    offset = msg.offset()
    return -1 if offset is None else offset


class Copier:
    """One consumer and one idempotent producer, reused for every batch a Python worker runs."""

    def __init__(
        self,
        consumer_config: Mapping[str, str | int | bool],
        producer_config: Mapping[str, str | int | bool],
        *,
        skip_oversized: bool = False,
    ) -> None:
        self._consumer = Consumer(
            {
                "group.id": "mm2-copier",
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                "auto.offset.reset": "earliest",
                "enable.partition.eof": True,
                **consumer_config,
            }
        )
        # The broker rejects a whole batch when one record is too large: to skip only the
        # records that really are, each record must travel in a batch of its own.
        one_per_batch = {"batch.num.messages": 1, "linger.ms": 0} if skip_oversized else {}
        self._producer = Producer(
            {
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 5,
                # Let the target broker judge record size; its limit is the one that matters.
                "message.max.bytes": 1_000_000_000,
                **producer_config,
                **one_per_batch,
            }
        )
        self._skip_oversized = skip_oversized

    def close(self) -> None:
        self._producer.flush(30)
        self._consumer.close()

    def copy(self, units: Sequence[WorkUnit], *, timeout_s: float = 120.0) -> list[CopyResult]:
        """Copy every unit; raise KafkaClientError (or RecordTooLargeError) on any failure."""
        states = {(u.topic, u.partition): _PartitionCopy(u) for u in units}
        active = {key for key, st in states.items() if not st.done}
        # Messages make no reference cycles: the collector would only burn CPU in the loop.
        collecting = gc.isenabled()
        gc.disable()
        try:
            if active:
                self._consumer.assign(
                    [TopicPartition(t, p, states[(t, p)].unit.start) for t, p in active]
                )
                self._pump(states, active, time.monotonic() + timeout_s)
                self._consumer.unassign()
            remaining = self._producer.flush(timeout_s)
        finally:
            if collecting:
                gc.enable()
        if remaining:
            raise KafkaClientError(
                f"{remaining} records were not acknowledged by the target within {timeout_s:.0f} s",
                retriable=True,
            )
        finished = int(time.time() * 1000)
        return [self._finish(st, finished) for st in states.values()]

    def _pump(
        self,
        states: dict[tuple[str, int], _PartitionCopy],
        active: set[tuple[str, int]],
        deadline: float,
    ) -> None:
        consume = self._consumer.consume
        while active:
            if time.monotonic() > deadline:
                self._timed_out(states, active)
            # consume(n, t) waits until n messages or t: take what has arrived, and only
            # when nothing has, wait for the first message (not for a full batch).
            messages = consume(_CONSUME_BATCH, 0) or consume(1, 0.1)
            if messages:
                self._copy_messages(messages, states, active)
            else:
                self._check_positions(states, active)
            self._producer.poll(0)

    def _copy_messages(
        self,
        messages: list[Message],
        states: dict[tuple[str, int], _PartitionCopy],
        active: set[tuple[str, int]],
    ) -> None:
        """The hot loop: one produce per record, nothing per record that can wait."""
        produce = self._producer.produce
        now_ms = int(time.time() * 1000)
        for msg in messages:
            if msg.error() is not None:
                self._on_event(msg, states, active)
                continue
            key = (msg.topic(), msg.partition())
            if key not in active:
                continue
            st = states[key]
            unit = st.unit
            offset = _offset(msg)
            if offset >= unit.until:
                active.discard(key)
                continue
            value = msg.value()
            kind, ts = msg.timestamp()
            record = (unit.target_topic, value, msg.key(), unit.partition, st.deliver)
            while True:
                try:
                    produce(*record, timestamp=ts if kind else 0, headers=msg.headers())
                    break
                except BufferError:
                    self._producer.poll(0.05)
            st.upstream.append(offset)
            res = st.result
            if value is not None:
                res.bytes += len(value)
            if kind:
                if res.min_timestamp < 0 or ts < res.min_timestamp:
                    res.min_timestamp = ts
                if ts > res.max_timestamp:
                    res.max_timestamp = ts
                res.sum_timestamp += ts
                age = now_ms - ts
                if res.age_min_ms < 0 or age < res.age_min_ms:
                    res.age_min_ms = age
                if age > res.age_max_ms:
                    res.age_max_ms = age
                res.age_sum_ms += age
            if offset + 1 >= unit.until:
                active.discard(key)

    def _on_event(
        self,
        msg: Message,
        states: dict[tuple[str, int], _PartitionCopy],
        active: set[tuple[str, int]],
    ) -> None:
        key = (msg.topic(), msg.partition())
        err = msg.error()
        assert err is not None
        if err.code() == KafkaError._PARTITION_EOF:
            if key in active and _offset(msg) >= states[key].unit.until:
                active.discard(key)
            return
        raise KafkaClientError(
            f"consume failed on {key[0]}-{key[1]}: {err}", retriable=err.retriable()
        )

    def _timed_out(
        self, states: dict[tuple[str, int], _PartitionCopy], active: set[tuple[str, int]]
    ) -> None:
        positions = self._consumer.position([TopicPartition(t, p) for t, p in active])
        late = ", ".join(
            f"{tp.topic}-{tp.partition} at {tp.offset}, "
            f"until {states[(tp.topic, tp.partition)].unit.until}"
            for tp in positions
        )
        raise KafkaClientError(f"timed out reading from the source: {late}", retriable=True)

    def _check_positions(
        self, states: dict[tuple[str, int], _PartitionCopy], active: set[tuple[str, int]]
    ) -> None:
        # Transaction markers and aborted records never reach us, but the position moves past them.
        positions = self._consumer.position([TopicPartition(t, p) for t, p in active])
        for tp in positions:
            if tp.offset >= 0 and tp.offset >= states[(tp.topic, tp.partition)].unit.until:
                active.discard((tp.topic, tp.partition))

    def _finish(self, st: _PartitionCopy, finished_ms: int) -> CopyResult:
        res = st.result
        res.finished_ms = finished_ms
        res.records = len(st.upstream)
        if st.failures:
            self._raise_or_skip(st)  # raises, or sets the runs without the skipped records
        else:
            res.runs = offset_runs(st.upstream, st.downstream)
        return res

    def _raise_or_skip(self, st: _PartitionCopy) -> None:
        unit, res = st.unit, st.result
        too_large = {
            i: size for i, e, size in st.failures if e.code() == KafkaError.MSG_SIZE_TOO_LARGE
        }
        if too_large and len(too_large) == len(st.failures) and self._skip_oversized:
            res.skipped = len(too_large)
            kept = [u for i, u in enumerate(st.upstream) if i not in too_large]
            res.runs = offset_runs(kept, st.downstream)
            return
        if too_large:
            # The whole batch fails with its largest record: name that one.
            index = max(too_large, key=lambda i: too_large[i])
            raise RecordTooLargeError(
                f"record {unit.topic}-{unit.partition}@{st.upstream[index]} "
                f"({too_large[index]} bytes) is larger than {unit.target_topic} on the target "
                "accepts; raise the target topic's max.message.bytes, or set "
                "skip.oversized.records=true to skip such records (they are counted and logged)"
            )
        index, err, _ = st.failures[0]
        raise KafkaClientError(
            f"producing {unit.topic}-{unit.partition}@{st.upstream[index]} to "
            f"{unit.target_topic} failed: {err.str()}",
            retriable=err.retriable(),
        )
