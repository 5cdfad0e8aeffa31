"""Source positions in Connect's offsets topic on the target (`mm2-offsets.<source>.internal`).

Apache MM2's dedicated mode keeps MirrorSourceConnector's positions there, keyed by
`["MirrorSourceConnector",{"cluster":..,"partition":..,"topic":..}]` with value `{"offset":N}`
(the last upstream offset copied). Keys are placed by Java's default partitioner (murmur2 of the
key bytes), which librdkafka's `murmur2_random` reproduces for non-null keys, so the newest
value of a key is the last one in its partition whichever of the two mirrors wrote it.

mm2 adds two headers Apache ignores: the source cluster's id (positions of another cluster are
refused, never applied) and what the write copied (`mm2.stats`, read by the metrics).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from mm2.errors import KafkaClientError, RecordFormatError
from mm2.kafka.copy_result import CopyResult, WorkUnit
from mm2.kafka.failure import ClientLog, classify, client_error, cluster_label
from mm2.kafka.offsets import OffsetLister
from mm2.kafka.topics import TopicAdmin
from mm2.records.connect_offsets import (
    ConnectOffsetKey,
    MirrorSourcePartition,
    decode_offset_value,
    encode_offset_value,
)

__all__ = [
    "CLUSTER_ID_HEADER",
    "PARTITIONER",
    "STATS_HEADER",
    "OffsetRecord",
    "OffsetTail",
    "PositionStats",
    "SourcePositions",
    "ensure_offsets_topic",
    "offset_record",
    "write_positions",
]

CLUSTER_ID_HEADER = "mm2.source.cluster.id"
STATS_HEADER = "mm2.stats"
# Java's default partitioner for keyed records; Connect's offset writer relies on it.
PARTITIONER = {"partitioner": "murmur2_random"}

TP = tuple[str, int]


@dataclass(frozen=True)
class PositionStats:
    """What one write of a position copied for its partition (the `mm2.stats` header)."""

    records: int
    byte_count: int
    skipped: int
    min_timestamp: int
    max_timestamp: int
    sum_timestamp: int
    age_min_ms: int
    age_max_ms: int
    age_sum_ms: int
    finished_ms: int

    def encode(self) -> bytes:
        return json.dumps(
            [
                self.records,
                self.byte_count,
                self.skipped,
                self.min_timestamp,
                self.max_timestamp,
                self.sum_timestamp,
                self.age_min_ms,
                self.age_max_ms,
                self.age_sum_ms,
                self.finished_ms,
            ],
            separators=(",", ":"),
        ).encode()

    @classmethod
    def of(cls, result: CopyResult, finished_ms: int) -> PositionStats:
        """What a copy task's result for one partition says, committed at finished_ms."""
        r = result
        return cls(
            r.records, r.bytes, r.skipped, r.min_timestamp, r.max_timestamp, r.sum_timestamp,
            r.age_min_ms, r.age_max_ms, r.age_sum_ms, finished_ms,
        )  # fmt: skip

    def result(self, unit: WorkUnit) -> CopyResult:
        """The CopyResult the metrics take, for `unit`."""
        return CopyResult(
            unit, records=self.records, bytes=self.byte_count, skipped=self.skipped,
            min_timestamp=self.min_timestamp, max_timestamp=self.max_timestamp,
            sum_timestamp=self.sum_timestamp, finished_ms=self.finished_ms,
            age_min_ms=self.age_min_ms, age_max_ms=self.age_max_ms, age_sum_ms=self.age_sum_ms,
        )  # fmt: skip

    @classmethod
    def decode(cls, data: bytes) -> PositionStats | None:
        try:
            values = json.loads(data)
            return cls(*(int(v) for v in values))
        except (ValueError, TypeError):
            return None


@dataclass(frozen=True)
class OffsetRecord:
    """One decoded record of the offsets topic that belongs to a source connector and alias."""

    topic: str
    partition: int
    offset: int | None  # None: a tombstone (the position was deleted)
    cluster_id: str | None  # None: written by Apache MM2 (or before mm2 tagged it)
    stats: PositionStats | None


def offset_record(
    connector: str,
    cluster: str,
    topic: str,
    partition: int,
    offset: int | None,
    *,
    cluster_id: str | None,
    stats: PositionStats | None = None,
) -> tuple[bytes, bytes | None, list[tuple[str, str | bytes | None]]]:
    """(key, value, headers) of a position; offset None makes a tombstone."""
    key = ConnectOffsetKey(connector, MirrorSourcePartition(cluster, topic, partition)).to_bytes()
    value = None if offset is None else encode_offset_value(offset)
    headers: list[tuple[str, str | bytes | None]] = []
    if cluster_id:
        headers.append((CLUSTER_ID_HEADER, cluster_id.encode()))
    if stats is not None:
        headers.append((STATS_HEADER, stats.encode()))
    return key, value, headers


def _decode(
    msg_key: bytes | None, value: bytes | None, headers: object
) -> tuple[ConnectOffsetKey, int | None, dict[str, bytes]] | None:
    if msg_key is None:
        return None
    try:
        key = ConnectOffsetKey.from_bytes(msg_key)
        offset = None if value is None else decode_offset_value(value)
    except RecordFormatError:
        return None  # other connectors' or foreign records: not ours to read
    found: dict[str, bytes] = {}
    if isinstance(headers, list):
        for name, raw in headers:
            if isinstance(raw, bytes):
                found[str(name)] = raw
    return key, offset, found


class OffsetTail:
    """Reads every partition of the offsets topic (read_committed), from the start, and then
    whatever arrives; keeps the records of one connector and source alias."""

    def __init__(
        self,
        consumer_config: Mapping[str, str],
        admin_config: Mapping[str, str],
        topic: str,
        *,
        connector: str,
        cluster: str,
    ) -> None:
        self.topic = topic
        self._admin_config = dict(admin_config)
        self._lister: OffsetLister | None = None
        self._connector = connector
        self._cluster = cluster
        self._consumer = Consumer(
            {
                "group.id": f"mm2-offsets-reader-{topic}",
                **consumer_config,
                "enable.auto.commit": False,
                "enable.partition.eof": True,
                "isolation.level": "read_committed",
                "auto.offset.reset": "earliest",
                # The end of a partition is known from a fetch's answer: at the broker's default
                # 500 ms wait, reading to the end before each copy epoch took 0.7 s.
                "fetch.wait.max.ms": 50,
                "logger": ClientLog(cluster_label(consumer_config)),
            }
        )
        self._assigned: set[int] = set()
        # How far each partition has been read: past the last record, or to where the
        # consumer said end-of-partition (a partition of only markers or aborted records
        # returns no record, and the consumer's position stays unset).
        self._read_up_to: dict[int, int] = {}
        self._backlog: list[OffsetRecord] = []

    def _assign_new_partitions(self, timeout: float) -> list[int]:
        try:
            meta = self._consumer.list_topics(self.topic, timeout=timeout)
        except Exception as exc:
            raise KafkaClientError(
                f"reading the partitions of {self.topic} failed: {exc}", retriable=True
            ) from exc
        info = meta.topics.get(self.topic)
        if info is None or info.error is not None:
            raise KafkaClientError(
                f"{self.topic} is not readable: {None if info is None else info.error}",
                retriable=True,
            )
        partitions = sorted(info.partitions)
        new = [p for p in partitions if p not in self._assigned]
        if new:
            self._consumer.incremental_assign(
                [TopicPartition(self.topic, p, -2) for p in new]  # OFFSET_BEGINNING
            )
            self._assigned.update(new)
        return partitions

    def _ends(self, partitions: Iterable[int], timeout: float) -> dict[int, int]:
        """Every partition's end offset, in one request (not one round trip per partition)."""
        lister = self._lister or OffsetLister(self._admin_config, timeout=timeout)
        self._lister = lister
        ends = lister.offsets(
            [(self.topic, p) for p in partitions], latest=True, read_committed=False
        )
        return {p: end for (_, p), end in ends.items()}

    def read_to_end(self, timeout: float = 15.0) -> list[OffsetRecord]:
        """Every new record up to the end offsets seen at the call (after fencing, the end).

        Records read by a call that times out are kept and returned by the next call: they
        have left the consumer, and a position dropped would be a position lost.
        """
        out = self._read_to_end(timeout)
        self._backlog = []
        return out

    def _read_to_end(self, timeout: float) -> list[OffsetRecord]:
        partitions = self._assign_new_partitions(min(timeout, 10.0))
        ends = self._ends(partitions, min(timeout, 10.0))
        out = self._backlog
        deadline = time.monotonic() + timeout
        while True:
            behind = [p for p in partitions if self._read_up_to.get(p, 0) < ends[p]]
            if not behind:
                return out
            if time.monotonic() > deadline:
                late = ", ".join(
                    f"{p} at {self._read_up_to.get(p, 0)} of {ends[p]}" for p in behind
                )
                raise KafkaClientError(
                    f"reading {self.topic} to its end timed out (at {late}); if this lasts, "
                    "a transaction that never ends may hold those partitions back "
                    "(kafka-transactions.sh find-hanging, docs/operations.md)",
                    retriable=True,
                )
            out.extend(self._consume(0.2))

    def poll(self, timeout: float = 0.0) -> list[OffsetRecord]:
        """The records that have arrived (waiting up to `timeout` for the first)."""
        out = self._backlog + self._consume(timeout)
        self._backlog = []
        return out

    def _consume(self, timeout: float) -> list[OffsetRecord]:
        out: list[OffsetRecord] = []
        for msg in self._consumer.consume(10_000, timeout):
            err = msg.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    self._read_up_to[msg.partition() or 0] = msg.offset() or 0
                    continue
                if classify(err).kind in ("authentication", "authorization") or err.fatal():
                    raise client_error(f"reading {self.topic}", err)
                continue  # transient: librdkafka retries by itself
            self._read_up_to[msg.partition() or 0] = (msg.offset() or 0) + 1
            decoded = _decode(msg.key(), msg.value(), msg.headers())
            if decoded is None:
                continue
            key, offset, headers = decoded
            part = key.partition
            if (
                key.connector != self._connector
                or not isinstance(part, MirrorSourcePartition)
                or part.cluster != self._cluster
            ):
                continue
            raw_id = headers.get(CLUSTER_ID_HEADER)
            raw_stats = headers.get(STATS_HEADER)
            out.append(
                OffsetRecord(
                    part.topic,
                    part.partition,
                    offset,
                    None if raw_id is None else raw_id.decode(errors="replace"),
                    None if raw_stats is None else PositionStats.decode(raw_stats),
                )
            )
        return out

    def close(self) -> None:
        self._consumer.close()


class SourcePositions:
    """The latest position of each source partition, as the offsets topic says."""

    def __init__(self) -> None:
        self.offsets: dict[TP, int] = {}
        self.cluster_ids: dict[TP, str | None] = {}

    def apply(self, records: Iterable[OffsetRecord]) -> None:
        for r in records:
            tp = (r.topic, r.partition)
            if r.offset is None:
                self.offsets.pop(tp, None)
                self.cluster_ids.pop(tp, None)
            else:
                self.offsets[tp] = r.offset
                self.cluster_ids[tp] = r.cluster_id

    def foreign(self, cluster_id: str) -> dict[TP, str]:
        """Partitions whose position was written for another source cluster, with its id."""
        return {
            tp: cid
            for tp, cid in self.cluster_ids.items()
            if cid is not None and cid != cluster_id and tp in self.offsets
        }


def ensure_offsets_topic(
    admin_config: Mapping[str, str], topic: str, *, partitions: int, replication_factor: int
) -> bool:
    """Create the offsets topic as Connect does (compacted) unless it exists."""
    return TopicAdmin(admin_config).create_compacted_topic(
        topic, replication_factor=replication_factor, partitions=partitions
    )


def write_positions(
    producer_config: Mapping[str, str],
    topic: str,
    *,
    connector: str,
    cluster: str,
    cluster_id: str | None,
    positions: Mapping[TP, int | None],
    timeout: float = 30.0,
) -> None:
    """Write (or, for None, delete) positions outside any copy task: REST alter and reset."""
    failures: list[str] = []

    def delivered(err: KafkaError | None, _msg: object) -> None:
        if err is not None:
            failures.append(err.str())

    settings = {"acks": "all", "enable.idempotence": True, **producer_config, **PARTITIONER}
    producer = Producer({**settings, "logger": ClientLog(cluster_label(producer_config))})
    for (t, p), offset in sorted(positions.items()):
        key, value, headers = offset_record(connector, cluster, t, p, offset, cluster_id=cluster_id)
        producer.produce(topic, value=value, key=key, headers=headers, on_delivery=delivered)
    remaining = producer.flush(timeout)
    if remaining or failures:
        what = failures[0] if failures else f"{remaining} not acknowledged in {timeout:.0f} s"
        raise KafkaClientError(f"writing positions to {topic} failed: {what}", retriable=True)
