"""Test data and plain Kafka clients: generated records, pre-fill, paced producing, topic admin."""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from confluent_kafka import KafkaError, KafkaException, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._config import AlterConfigOpType, ConfigEntry, ConfigResource
from confluent_kafka.admin._listoffsets import OffsetSpec
from confluent_kafka.cimpl import NewTopic

from bench.avro import avro_value

__all__ = [
    "Admin",
    "RecordShape",
    "fill",
    "produce",
    "producer_config",
    "record",
]

# The mirrors' target producers are compared at acks=all without compression; the bench's own
# producers use the same so that the ceiling is measured under the same rules.
_PRODUCER: dict[str, str | int | bool] = {
    "acks": "all",
    "compression.type": "none",
    "enable.idempotence": True,
    "linger.ms": 5,
    "queue.buffering.max.messages": 1_000_000,
    "queue.buffering.max.kbytes": 1_048_576,
}
_POOL = 256


def producer_config(bootstrap: str, **overrides: str | int | bool) -> dict[str, str | int | bool]:
    return {"bootstrap.servers": bootstrap, **_PRODUCER, **overrides}


@dataclass(frozen=True)
class RecordShape:
    """How a workload's records look: value size, the seed of their bytes, and with schema_id
    (`--avro`) values framed as Confluent's Avro serializer writes them (bench.avro)."""

    value_bytes: int = 1024
    seed: int = 7
    schema_id: int | None = None

    def pool(self) -> list[bytes]:
        rng = random.Random(self.seed)
        width = max(self.value_bytes - 8, 0)
        return [rng.randbytes(width) for _ in range(_POOL)]


def record(i: int, pool: list[bytes], schema_id: int | None = None) -> tuple[bytes, bytes]:
    """Key and value of record i: the index leads the value so no two values are equal. With a
    schema ID the value is an Avro record of the index and the pool's bytes, with its ID."""
    if schema_id is not None:
        return b"k%d" % i, avro_value(schema_id, i, pool[i % _POOL])
    return b"k%d" % i, i.to_bytes(8, "big") + pool[i % _POOL]


def produce(
    producer: Producer,
    topic: str,
    key: bytes,
    value: bytes,
    partition: int,
    headers: list[tuple[str, str | bytes | None]] | None = None,
    on_delivery: Callable[[KafkaError | None, Message], None] | None = None,
) -> None:
    """One record, waiting for room when the producer's local queue is full."""
    while True:
        try:
            producer.produce(topic, value, key, partition, on_delivery=on_delivery, headers=headers)
            return
        except BufferError:  # local queue full: let deliveries drain
            producer.poll(0.05)


def fill(
    bootstrap: str,
    topics: str | Sequence[str],
    partitions: int,
    count: int,
    shape: RecordShape,
    *,
    headers: list[tuple[str, str | bytes | None]] | None = None,
    progress: Callable[[int], object] | None = None,
    warm_up: bool = False,
) -> float:
    """Produce records 0..count round-robin over partitions into each topic; the seconds it took.

    One producer for every topic: an idempotent producer takes a round trip to start. warm_up
    sends one extra record (key b"warm-up") before the clock starts, so a rate measured from
    the seconds leaves the producer's start (producer id, metadata) out.
    """
    names = [topics] if isinstance(topics, str) else list(topics)
    producer = Producer(producer_config(bootstrap))
    if warm_up:
        producer.produce(names[0], b"", b"warm-up", 0)
        producer.flush(60)
    failures: list[str] = []

    def delivered(err: KafkaError | None, _msg: Message) -> None:
        if err is not None:
            failures.append(str(err))

    pool = shape.pool()
    started = time.monotonic()
    n = 0
    for topic in names:
        for i in range(count):
            key, value = record(i, pool, shape.schema_id)
            produce(producer, topic, key, value, i % partitions, headers, delivered)
            n += 1
            if n % 10_000 == 0:
                producer.poll(0)
                if progress is not None:
                    progress(10_000)
    left = producer.flush(120)
    elapsed = time.monotonic() - started
    if progress is not None:
        progress(n % 10_000)
    if left or failures:
        raise RuntimeError(f"producing to {names[0]}...: {left} unsent, failures: {failures[:3]}")
    return elapsed


class Admin:
    """The few admin calls the bench makes, each waiting for its answer."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self._admin = AdminClient({"bootstrap.servers": bootstrap})

    def create_topics(
        self, names: Iterable[str], partitions: int, config: Mapping[str, str] | None = None
    ) -> None:
        topics = [NewTopic(n, partitions, 1, config=dict(config or {})) for n in names]
        for start in range(0, len(topics), 100):
            futures = self._admin.create_topics(topics[start : start + 100], request_timeout=60)
            for future in futures.values():
                future.result()
        self._wait_for_leaders([t.topic for t in topics], partitions)

    def _wait_for_leaders(self, names: list[str], partitions: int, timeout: float = 300) -> None:
        """Created is not yet writable: with a thousand new topics a producer still hears
        UNKNOWN_TOPIC_OR_PART for a while. Wait until every partition has a leader."""
        deadline = time.monotonic() + timeout
        waiting = set(names)
        while waiting:
            meta = self._admin.list_topics(timeout=30)
            waiting = {
                n
                for n in waiting
                if n not in meta.topics
                or meta.topics[n].error is not None
                or len(meta.topics[n].partitions) < partitions
                or any(p.leader < 0 for p in meta.topics[n].partitions.values())
            }
            if waiting and time.monotonic() > deadline:
                raise RuntimeError(f"{len(waiting)} new topics have no leader after {timeout} s")
            if waiting:
                time.sleep(0.5)

    def close(self) -> None:
        """Let go of the client (librdkafka stops it), before its broker is stopped."""
        with contextlib.suppress(AttributeError):
            del self._admin

    def delete_topics(self, names: Iterable[str]) -> None:
        wanted = set(names) & set(self.topics())
        if not wanted:
            return
        for future in self._admin.delete_topics(sorted(wanted), request_timeout=60).values():
            with contextlib.suppress(KafkaException):  # already gone: all the bench wants
                future.result()

    def topics(self) -> dict[str, int]:
        """Topic -> partition count."""
        meta = self._admin.list_topics(timeout=30)
        return {name: len(t.partitions) for name, t in meta.topics.items() if t.error is None}

    def end_offsets(self, partitions: Iterable[tuple[str, int]]) -> dict[tuple[str, int], int]:
        """Latest offsets in one request per broker; partitions not (yet) there are left out.

        Asking librdkafka for a topic it has not seen yet makes it remember the topic as unknown
        for minutes, so only topics that the cluster's metadata lists right now are asked for.
        """
        present = self.topics()
        request = {
            TopicPartition(t, p): OffsetSpec.latest()  # type: ignore[no-untyped-call]
            for t, p in partitions
            if p < present.get(t, 0)
        }
        if not request:
            return {}
        out: dict[tuple[str, int], int] = {}
        futures = self._admin.list_offsets(request, request_timeout=30)
        for tp, future in futures.items():
            try:
                out[(tp.topic, tp.partition)] = future.result().offset
            except KafkaException:
                continue
        return out

    def topic_config(self, topic: str) -> dict[str, str]:
        resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
        try:
            entries = self._admin.describe_configs([resource])[resource].result()
        except KafkaException:
            return {}
        return {name: str(entry.value) for name, entry in entries.items()}

    def set_topic_config(self, topic: str, name: str, value: str) -> None:
        entry = ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)
        resource = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[entry])
        for future in self._admin.incremental_alter_configs([resource]).values():
            future.result()
