"""Correctness: per-partition counts and order-sensitive digests, source against target."""

from __future__ import annotations

import hashlib
import struct
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from confluent_kafka import Consumer, KafkaError, Message, TopicPartition

from bench.data import Admin
from mm2.kafka.take import take

__all__ = [
    "PartitionDigest",
    "TopicRead",
    "Verdict",
    "compare",
    "read_topic",
    "read_topics",
    "record_digest_update",
]

# Consumer settings shared by the digest reader and the raw-read ceiling.
CONSUMER = {
    "group.id": "mm2-bench-reader",
    "enable.auto.commit": False,
    "enable.partition.eof": True,
    "auto.offset.reset": "earliest",
    # What an exactly-once consumer sees (librdkafka's default, spelled out): a mirror's
    # aborted transactions are not records of the target.
    "isolation.level": "read_committed",
    "fetch.min.bytes": 1,
    "fetch.max.bytes": 52_428_800,
    "max.partition.fetch.bytes": 1_048_576,
    "fetch.wait.max.ms": 500,
}
_LEN = struct.Struct(">q")
_NONE = _LEN.pack(-1)


@dataclass(frozen=True)
class PartitionDigest:
    count: int
    digest: str


@dataclass
class TopicRead:
    """What reading topics found: digests per topic and partition, optional per-record figures."""

    topics: dict[str, dict[int, PartitionDigest]] = field(default_factory=dict)
    latencies_ms: list[int] = field(default_factory=list)
    records: int = 0
    bytes: int = 0
    seconds: float = 0.0

    @property
    def partitions(self) -> dict[int, PartitionDigest]:
        """The digests of the one topic read (read_topic)."""
        (only,) = self.topics.values()
        return only


def _field(value: bytes | None) -> bytes:
    return _NONE if value is None else _LEN.pack(len(value)) + value


Headers = Iterable[tuple[str, str | bytes | None]] | Mapping[str, str | bytes | None] | None


def _bytes(value: str | bytes | None) -> bytes | None:
    return value.encode() if isinstance(value, str) else value


def _header_items(headers: Headers) -> list[tuple[str, str | bytes | None]]:
    return list(headers.items() if isinstance(headers, Mapping) else headers or ())


def record_digest_update(
    h: hashlib.blake2b,
    key: str | bytes | None,
    value: str | bytes | None,
    headers: Headers,
    timestamp: int | None,
) -> None:
    """Feed one record into a partition's digest; lengths are framed so fields cannot blur."""
    parts = [_field(_bytes(key)), _field(_bytes(value))]
    hdrs = _header_items(headers)
    parts.append(_LEN.pack(len(hdrs)))
    for name, hvalue in hdrs:
        parts.append(_field(name.encode()))
        parts.append(_field(_bytes(hvalue)))
    if timestamp is not None:
        parts.append(_LEN.pack(timestamp))
    h.update(b"".join(parts))


def _latency(msg: Message, header: str) -> int | None:
    for name, value in _header_items(msg.headers()):
        if name == header and isinstance(value, bytes):
            return msg.timestamp()[1] - int.from_bytes(value, "big")
    return None


def _at_end(
    active: set[tuple[str, int]], ends: Mapping[tuple[str, int], int], eof: Message
) -> None:
    """A partition is read once the consumer's position passes its end offset.

    A transactional producer (the mirror with exactly-once) ends its records with a commit
    marker: the end offset is one past the marker, which is never handed out as a record, so
    the last record's offset + 1 falls short of it. The end-of-partition event carries the
    position, which has moved past the marker.
    """
    key = (eof.topic() or "", eof.partition() or 0)
    offset = eof.offset()
    if key in active and offset is not None and offset >= ends[key]:
        active.discard(key)


def read_topic(
    bootstrap: str,
    topic: str,
    partitions: int,
    *,
    digest: bool = True,
    timestamps: bool = True,
    latency_header: str | None = None,
    progress: Callable[[int], object] | None = None,
    timeout_s: float = 600.0,
    value_map: Callable[[bytes | None], bytes | None] | None = None,
) -> TopicRead:
    """Read every partition of one topic from offset 0 to its end at call time (read_topics)."""
    return read_topics(
        bootstrap,
        {topic: partitions},
        digest=digest,
        timestamps=timestamps,
        latency_header=latency_header,
        progress=progress,
        timeout_s=timeout_s,
        value_map=value_map,
    )


def read_topics(
    bootstrap: str,
    topics: Mapping[str, int],
    *,
    digest: bool = True,
    timestamps: bool = True,
    latency_header: str | None = None,
    progress: Callable[[int], object] | None = None,
    timeout_s: float = 600.0,
    value_map: Callable[[bytes | None], bytes | None] | None = None,
) -> TopicRead:
    """Read every partition of the topics (name -> partition count) from 0 to its end now.

    One consumer for all of them. digest=False is the raw-read ceiling: count records and bytes
    only. timestamps=False leaves record timestamps out of the digest (a LogAppendTime target
    rewrites them). latency_header names a header holding the source timestamp: the record's
    own timestamp minus it is kept. value_map changes each value before the digest (a mirror
    that rewrites schema IDs, bench.avro). A topic that is not there reads as empty partitions.
    """
    keys = [(t, p) for t, n in topics.items() for p in range(n)]
    ends = dict.fromkeys(keys, 0) | Admin(bootstrap).end_offsets(keys)
    hashes = {k: hashlib.blake2b(digest_size=16) for k in keys}
    counts = dict.fromkeys(keys, 0)
    out = TopicRead()
    active = {k for k, end in ends.items() if end > 0}
    consumer = Consumer({"bootstrap.servers": bootstrap, **CONSUMER})
    started = time.monotonic()
    try:
        consumer.assign([TopicPartition(t, p, 0) for t, p in active])
        while active and time.monotonic() - started < timeout_s:
            batch = take(consumer, 10_000, 1.0)
            data = 0
            for msg in batch:
                err = msg.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        _at_end(active, ends, msg)
                        continue
                    raise RuntimeError(f"reading {msg.topic()}: {err}")
                key = (msg.topic() or "", msg.partition() or 0)
                offset = msg.offset()
                if key not in active or offset is None or offset >= ends[key]:
                    continue
                data += 1
                value = msg.value()
                counts[key] += 1
                out.bytes += len(value) if value else 0
                if digest:
                    ts = msg.timestamp()[1] if timestamps else None
                    if value_map is not None:
                        value = value_map(value)
                    record_digest_update(hashes[key], msg.key(), value, msg.headers(), ts)
                if latency_header is not None:
                    latency = _latency(msg, latency_header)
                    if latency is not None:
                        out.latencies_ms.append(latency)
                if offset + 1 >= ends[key]:
                    active.discard(key)
            if progress is not None and data:
                progress(data)
    finally:
        consumer.close()
    out.seconds = time.monotonic() - started
    if active:
        raise RuntimeError(f"reading: partitions {sorted(active)[:5]} did not end in time")
    out.records = sum(counts.values())
    for (t, p), count in counts.items():
        out.topics.setdefault(t, {})[p] = PartitionDigest(
            count, hashes[(t, p)].hexdigest() if digest else ""
        )
    return out


@dataclass(frozen=True)
class Verdict:
    """Source and target compared; problems name the partition and what went wrong."""

    ok: bool
    records_source: int
    records_target: int
    problems: tuple[str, ...]


def compare(
    source: Mapping[str, Mapping[int, PartitionDigest]],
    target: Mapping[str, Mapping[int, PartitionDigest]],
) -> Verdict:
    """Topic -> partition -> digest on both sides; any difference fails the run."""
    problems: list[str] = []
    for topic, parts in sorted(source.items()):
        theirs = target.get(topic)
        if theirs is None:
            problems.append(f"{topic}: missing on the target")
            continue
        for p, want in sorted(parts.items()):
            got = theirs.get(p, PartitionDigest(0, ""))
            if got.count < want.count:
                problems.append(f"{topic}-{p}: lost {want.count - got.count} of {want.count}")
            elif got.count > want.count:
                problems.append(f"{topic}-{p}: {got.count - want.count} extra (duplicates)")
            elif got.digest != want.digest:
                problems.append(f"{topic}-{p}: same count, different records or order")
        extra = sorted(set(theirs) - set(parts))
        problems.extend(f"{topic}-{p}: partition not on the source" for p in extra)
    return Verdict(
        ok=not problems,
        records_source=sum(d.count for parts in source.values() for d in parts.values()),
        records_target=sum(d.count for parts in target.values() for d in parts.values()),
        problems=tuple(problems),
    )
