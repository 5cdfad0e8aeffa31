"""Kafka as tests see it: the clusters they talk to, topics made for them, records written
and read back with plain confluent-kafka clients (never through mm2's own wrappers, which are
what is under test)."""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, cast

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._config import AlterConfigOpType, ConfigEntry, ConfigResource
from confluent_kafka.admin._resource import ResourceType
from confluent_kafka.cimpl import NewTopic

from mm2.kafka.take import take

# (offset, key, value, timestamp, headers) of one record read back.
Record = tuple[int, bytes | None, bytes | None, int, tuple[tuple[str, bytes | None], ...]]
Headers = tuple[tuple[str, bytes | None], ...]


class Cluster(Protocol):
    """What a helper needs of a cluster: conftest's `primary`/`backup` (KafkaCluster) and
    mm2.localcluster's LocalCluster both are one."""

    @property
    def name(self) -> str: ...

    @property
    def bootstrap_servers(self) -> str: ...

    def client_config(self) -> dict[str, str]: ...


@dataclass(frozen=True)
class KafkaCluster:
    """A cluster a test talks to: its alias and where to bootstrap."""

    name: str
    bootstrap_servers: str

    def client_config(self) -> dict[str, str]:
        return {"bootstrap.servers": self.bootstrap_servers}


def admin_client(config: dict[str, Any]) -> AdminClient:
    """An AdminClient on `config`. Its stub wants dict[str, str | int | float | bool], which
    neither a dict[str, str] (dict is invariant) nor a callback such as error_cb (a setting
    librdkafka's Python binding takes, as Producer's and Consumer's dict[str, Any] admit) is."""
    return AdminClient(cast("dict[str, str | int | float | bool]", config))


def create_topic(
    cluster: Cluster,
    name: str,
    *,
    partitions: int = 1,
    config: dict[str, str] | None = None,
) -> str:
    """Create `name` on `cluster` and wait until the controller accepted it."""
    admin_config: dict[str, str | int | float | bool] = {**cluster.client_config()}
    admin = AdminClient(admin_config)
    topic = NewTopic(name, num_partitions=partitions, replication_factor=1, config=config or {})
    admin.create_topics([topic], operation_timeout=30, request_timeout=30)[name].result(timeout=60)
    return name


def set_broker_config(admin: AdminClient, name: str, value: str | None) -> list[str]:
    """Set the dynamic broker setting `name` on every broker (None deletes it: back to the
    broker's default); returns the broker ids. A broker applies it a moment after the
    controller accepts it."""
    op = AlterConfigOpType.SET if value is not None else AlterConfigOpType.DELETE
    entry = ConfigEntry(name, value or "", incremental_operation=op)
    brokers = [str(b) for b in admin.list_topics(timeout=30).brokers]
    for broker in brokers:  # librdkafka takes one broker resource per request
        resource = ConfigResource(ResourceType.BROKER, broker, incremental_configs=[entry])
        for future in admin.incremental_alter_configs([resource]).values():
            future.result(timeout=60)
    return brokers


def set_cleaner_backoff(cluster: Cluster, ms: int | None) -> None:
    """Set each broker's `log.cleaner.backoff.ms` (how long the log cleaner sleeps when it has
    nothing to clean; Kafka's default 15,000); None: back to the default."""
    value = None if ms is None else str(ms)
    set_broker_config(admin_client(cluster.client_config()), "log.cleaner.backoff.ms", value)


def unique_name(prefix: str) -> str:
    """`prefix-<uuid>`: a topic or group name no other test uses."""
    return f"{prefix}-{uuid.uuid4().hex}"


def produce(
    bootstrap: str,
    topic: str,
    records: Iterable[tuple[int, bytes | None, bytes | None]],
    *,
    config: Mapping[str, Any] | None = None,
    flush_timeout: float = 60.0,
) -> int:
    """Write (partition, key, value) records, waiting out a full local queue; every one must be
    acknowledged. Returns how many were written."""
    producer = Producer({"bootstrap.servers": bootstrap, **(config or {})})
    written = 0
    for partition, key, value in records:
        while True:
            try:
                producer.produce(topic, value, key, partition=partition)
                break
            except BufferError:
                producer.poll(0.5)
        written += 1
        producer.poll(0)
    left = producer.flush(flush_timeout)
    assert left == 0, f"{left} records to {topic} not acknowledged"
    return written


def commit_group(bootstrap: str, group: str, offsets: Mapping[tuple[str, int], int]) -> None:
    """`group` commits `offsets` ((topic, partition) -> offset), as a consumer that read that
    far would."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        commits = [TopicPartition(t, p, o) for (t, p), o in offsets.items()]
        deadline = time.monotonic() + 60
        while True:
            try:
                consumer.commit(offsets=commits, asynchronous=False)
                return
            except KafkaException as exc:  # a cluster just started: its coordinator loads
                err = exc.args[0] if exc.args else None
                if not _coordinator_busy(err) or time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
    finally:
        consumer.close()


def _coordinator_busy(err: object) -> bool:
    return isinstance(err, KafkaError) and (
        err.retriable()
        or err.code()
        in (
            KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
            KafkaError.NOT_COORDINATOR,
            KafkaError.COORDINATOR_NOT_AVAILABLE,
        )
    )


def produce_numbered(bootstrap: str, topic: str, prefix: bytes, n: int) -> None:
    """`prefix-0` .. `prefix-<n-1>` to partition 0 of `topic`, acknowledged."""
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(n):
        producer.produce(topic, prefix + b"-%d" % i, partition=0)
    assert producer.flush(30) == 0


def read_topic(bootstrap: str, topic: str, **config: Any) -> dict[int, list[Record]]:
    """Every record of every partition, in order, from the start to the high watermark."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "mm2-test-reader",
            "enable.auto.commit": False,
            "enable.partition.eof": False,
            **config,
        }
    )
    try:
        metadata = consumer.list_topics(topic, timeout=10).topics[topic]
        out: dict[int, list[Record]] = {}
        for p in sorted(metadata.partitions):
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
            records: list[Record] = []
            if high > low:
                consumer.assign([TopicPartition(topic, p, low)])
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline:
                    msgs = take(consumer, 1000, 0.5)
                    for m in msgs:
                        if m.error():
                            continue
                        records.append(
                            (
                                m.offset() or 0,
                                m.key(),
                                m.value(),
                                m.timestamp()[1],
                                cast(Headers, tuple(m.headers() or ())),
                            )
                        )
                    position = consumer.position([TopicPartition(topic, p)])[0].offset
                    if position >= high:
                        break
            out[p] = records
        return out
    finally:
        consumer.close()


def count(bootstrap: str, topic: str) -> int:
    """Records a read_committed reader sees in `topic` (0 while a just-created topic has no
    leader yet). Records are read, not offsets subtracted: transaction markers take offsets."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "mm2-test-counter",
            "enable.partition.eof": True,
            "isolation.level": "read_committed",
        }
    )
    try:
        metadata = consumer.list_topics(timeout=10).topics.get(topic)
        if metadata is None or metadata.error is not None:
            return 0
        partitions = []
        for p in metadata.partitions:
            try:
                low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
            except KafkaException:
                return 0
            if high > low:
                partitions.append(TopicPartition(topic, p, low))
        if not partitions:
            return 0
        consumer.assign(partitions)
        total = 0
        ended: set[int | None] = set()
        deadline = time.monotonic() + 30
        while len(ended) < len(partitions) and time.monotonic() < deadline:
            for m in take(consumer, 10_000, 0.5):
                err = m.error()
                if err is None:
                    total += 1
                elif err.code() == KafkaError._PARTITION_EOF:
                    ended.add(m.partition())
        return total
    finally:
        consumer.close()


def last_values(bootstrap: str, topic: str, *, keys: bool = False) -> dict[int, bytes | None]:
    """The value (or with `keys` the key) of the last committed record of each partition (order
    is kept, so a mirror whose every partition ends with the source's last record has caught
    up). The log may end in transaction markers, so the last records are read, not the last
    offset."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "mm2-test-tail",
            "enable.partition.eof": True,
            "isolation.level": "read_committed",
        }
    )
    try:
        metadata = consumer.list_topics(timeout=10).topics.get(topic)
        if metadata is None or metadata.error is not None:
            return {}
        out: dict[int, bytes | None] = {}
        for p in metadata.partitions:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
            if high <= low:
                continue
            consumer.assign([TopicPartition(topic, p, max(low, high - 200))])
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                msgs = take(consumer, 1000, 1)
                for m in msgs:
                    if m.error() is None:
                        out[p] = m.key() if keys else m.value()
                if any(
                    (e := m.error()) is not None and e.code() == KafkaError._PARTITION_EOF
                    for m in msgs
                ):
                    break
        return out
    finally:
        consumer.close()


def content(records: list[Record]) -> list[tuple[Any, ...]]:
    """A partition's records without their offsets (offsets differ between clusters)."""
    return [r[1:] for r in records]


def digest(records: list[Record]) -> str:
    h = hashlib.sha256()
    for r in content(records):
        h.update(repr(r).encode())
    return h.hexdigest()
