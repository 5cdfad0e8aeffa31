"""A flow's positions: where each copy task resumes, kept in Connect's offsets topic on the target.

Apache MM2's dedicated mode keeps MirrorSourceConnector's positions in
`mm2-offsets.<source>.internal`, keyed `["MirrorSourceConnector",{"cluster":..,"partition":..,
"topic":..}]` with value `{"offset":N}` (the last upstream offset copied). Keys are placed by
Java's default partitioner (murmur2 of the key bytes), which librdkafka's `murmur2_random`
reproduces for non-null keys, so the newest value of a key is the last one in its partition
whichever of the two mirrors wrote it.

One record (its key, value and the headers mm2 adds) and the latest positions they add up to
are in mm2.copy.position_record.

`PositionsTopic` is the one handle to that topic: the planner, the copy tasks (Spark pickles
it), REST and the command-line tools all use it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeVar

from confluent_kafka import KafkaError, Producer

from mm2.copy.offsets_reader import Decode, KeyPartitions, OffsetsTopicReader, R
from mm2.copy.position_record import (
    CONNECTOR,
    PARTITIONER,
    PositionRecord,
    StoredPositions,
    decode_position,
    position_key,
    position_record,
)
from mm2.copy.ready import CopyReady, decode_ready
from mm2.copy.source_ends import SourceEnds, decode_source_ends
from mm2.errors import ConfigError, KafkaClientError
from mm2.kafka.admin import describe_cluster
from mm2.kafka.failure import ClientLog, cluster_label
from mm2.kafka.first_requests import learn_brokers
from mm2.kafka.topics import TopicAdmin
from mm2.records import TP
from mm2.records.java_partitioner import java_partition

__all__ = ["PositionsTopic", "TaskPositions", "holding"]


if TYPE_CHECKING:  # an executor's Python has mm2 and confluent-kafka, not mm2.config's needs
    from mm2.config import Flow

log = logging.getLogger(__name__)


def holding(connector: str, cluster: str, partitions: Iterable[TP]) -> KeyPartitions:
    """For a partition count, the partitions of the offsets topic that hold the positions of
    `partitions` (keyed as Connect keys them, placed by Java's partitioner) and partition 0
    (the copy tasks' notices and the planner's assignment records)."""
    keys = [position_key(connector, cluster, t, p) for t, p in partitions]

    def of(count: int) -> set[int]:
        return {0, *(java_partition(key, count) for key in keys)}

    return of


class TaskPositions(Protocol):
    """What a copy task needs of its flow's offsets topic (PositionsTopic): where to resume, and
    where to say it is ready."""

    @property
    def topic(self) -> str: ...

    @property
    def producer_config(self) -> Mapping[str, str]: ...


class _OfFlow(Protocol):
    @property
    def flow(self) -> str: ...


N = TypeVar("N", bound=_OfFlow)


def _notice(
    hook: Callable[[N], None] | None,
    decode: Callable[[bytes | None, bytes | None], N | None],
    key: bytes | None,
    value: bytes | None,
    flow: str,
) -> bool:
    """True when `hook` wants the kind of notice `decode` reads and the record is one (handed
    to `hook` when it is `flow`'s)."""
    if hook is None or (notice := decode(key, value)) is None:
        return False
    if notice.flow == flow:
        hook(notice)
    return True


@dataclass(frozen=True)
class PositionsTopic:
    """A flow's offsets topic, the clients that reach it and the keys it uses: plain values, so
    that Spark can hand it to a copy task."""

    flow: str
    topic: str
    connector: str
    source_alias: str
    partitions: int
    replication_factor: int  # 0: not configured
    admin_config: dict[str, str]
    consumer_config: dict[str, str]
    producer_config: dict[str, str]
    source_admin_config: dict[str, str]

    @classmethod
    def of(cls, flow: Flow) -> PositionsTopic:
        """`offset.storage.topic` (default `mm2-offsets.<source>.internal`) on the target."""
        worker = flow.settings.worker
        return cls(
            flow=flow.name,
            topic=worker.offset_storage_topic,
            connector=flow.connector_config().get("name") or CONNECTOR,
            source_alias=flow.source,
            partitions=worker.offset_storage_partitions,
            replication_factor=worker.offset_storage_replication_factor or 0,
            admin_config=flow.target_admin_config(label="offsets-admin"),
            consumer_config=flow.target_consumer_config(CONNECTOR, "offsets-consumer"),
            producer_config=flow.target_producer_config(label="offsets-producer"),
            source_admin_config=flow.source_admin_config(),
        )

    def ensure(self) -> bool:
        """Create the topic as Connect does (compacted) unless it exists (True: created). Without
        offset.storage.replication.factor, a cluster of fewer than 3 brokers gets its own
        default.replication.factor (Connect would fail to start there), with a warning."""
        admin = TopicAdmin(self.admin_config)
        try:
            created = admin.create_compacted_topic(
                self.topic,
                replication_factor=self.replication_factor or 3,
                partitions=self.partitions,
            )
        except KafkaClientError as exc:
            if self.replication_factor or exc.code != "INVALID_REPLICATION_FACTOR":
                raise
            log.warning(
                "%s: %s created with the target's default.replication.factor: it has fewer "
                "than 3 brokers (set offset.storage.replication.factor to choose)",
                self.flow,
                self.topic,
            )
            created = admin.create_compacted_topic(
                self.topic, replication_factor=-1, partitions=self.partitions
            )
        self._verify_compacted(admin)
        return created

    def _verify_compacted(self, admin: TopicAdmin) -> None:
        """Refuse an offsets topic that is not compacted, as Connect does: retention would
        delete positions, and a flow would copy again what it copied long ago. A cluster that
        does not let mm2 describe configs leaves it unverified (logged)."""
        try:
            entries = admin.describe_topic_configs([self.topic]).get(self.topic, [])
        except KafkaClientError as exc:
            log.info("%s: cleanup.policy of %s not verified: %s", self.flow, self.topic, exc)
            return
        policy = next((e.value for e in entries if e.name == "cleanup.policy"), None)
        if policy is not None and "compact" not in [p.strip() for p in policy.split(",")]:
            raise ConfigError(
                f"{self.topic} on the target has cleanup.policy={policy}: the offsets topic must "
                "be compacted (cleanup.policy=compact), as Kafka Connect requires, or retention "
                "deletes positions and copied records are copied again. Alter the topic "
                "(kafka-configs --alter --add-config cleanup.policy=compact) or name another "
                "one in offset.storage.topic",
                key="offset.storage.topic",
            )

    def source_cluster_id(self) -> str:
        try:
            return describe_cluster(self.source_admin_config).cluster_id
        except KafkaClientError as exc:
            bootstrap = self.source_admin_config.get("bootstrap.servers", "?")
            raise KafkaClientError(
                f"source cluster {self.source_alias!r} ({bootstrap}) did not answer: {exc}",
                retriable=True,
            ) from exc

    def source_topics(self) -> dict[str, int]:
        """The partition count of every topic on the source cluster."""
        return TopicAdmin(self.source_admin_config).list_topics()

    def reader(
        self,
        on_ready: Callable[[CopyReady], None] | None = None,
        on_ends: Callable[[SourceEnds], None] | None = None,
    ) -> OffsetsTopicReader[PositionRecord]:
        """A reader of the topic from its start (close it when done); `on_ready` is given the
        notices of this flow's copy tasks that they copy (mm2.copy.ready), `on_ends` the
        source's ends the mirror read for this flow (mm2.copy.source_ends)."""

        def decode(
            key: bytes | None, value: bytes | None, headers: object
        ) -> PositionRecord | None:
            if _notice(on_ready, decode_ready, key, value, self.flow) or _notice(
                on_ends, decode_source_ends, key, value, self.flow
            ):
                return None
            return decode_position(
                key, value, headers, connector=self.connector, cluster=self.source_alias
            )

        return self.tail(decode)

    def tail(self, decode: Decode[R]) -> OffsetsTopicReader[R]:
        """A reader of the topic from its start with `decode` (close it when done)."""
        return OffsetsTopicReader(
            self.consumer_config, self.admin_config, self.topic, decode=decode
        )

    def holding(self, partitions: Iterable[TP]) -> KeyPartitions:
        """The module's `holding`, for this flow's connector and source cluster."""
        return holding(self.connector, self.source_alias, partitions)

    def read(
        self,
        timeout: float = 15.0,
        *,
        ensure: bool = True,
        only: Iterable[TP] | None = None,
        stable: bool = False,
    ) -> StoredPositions:
        """Every position the topic holds now, committed records only (with `ensure`, the
        topic is created first if it is missing); with `only`, those of these partitions,
        waiting only for the partitions of the topic that hold them; with `stable`, what is
        committed now, not waiting for transactions still open (OffsetsTopicReader). The
        source's ends the mirror recorded come with them (`source_ends`)."""
        if ensure:
            self.ensure()
        positions = StoredPositions()
        # The ends are applied as read, before the positions read with them: by time, so the
        # order does not matter.
        reader = self.reader(on_ends=positions.apply_ends)
        try:
            holding = None if only is None else self.holding(only)
            positions.apply(reader.read_to_end(timeout, holding=holding, stable=stable))
            return positions
        finally:
            reader.close()

    def write(
        self,
        positions: Mapping[TP, int | None],
        *,
        cluster_id: str | None = None,
        topic_ids: Mapping[TP, str] | None = None,
        leader_epochs: Mapping[TP, int] | None = None,
        timeout: float = 30.0,
    ) -> None:
        """Set (or with None delete) positions outside any copy task (REST, a settle), tagged
        with the source cluster's id (asked for when not given, left out if the source does
        not answer) and, where given, the source topic's id and the record's leader epoch."""
        self.ensure()
        if cluster_id is None:
            try:
                cluster_id = self.source_cluster_id()
            except KafkaClientError:
                cluster_id = None
        failures: list[str] = []

        def delivered(err: KafkaError | None, _msg: object) -> None:
            if err is not None:
                failures.append(err.str())

        settings = {
            "acks": "all",
            "enable.idempotence": True,
            "allow.auto.create.topics": False,
            **self.producer_config,
        }
        producer = Producer(
            {**settings, **PARTITIONER, "logger": ClientLog(cluster_label(self.producer_config))}
        )
        learn_brokers(producer, self.topic)  # its producer id, not on a bootstrap connection
        for (t, p), offset in sorted(positions.items()):
            key, value, headers = position_record(
                self.connector,
                self.source_alias,
                t,
                p,
                offset,
                cluster_id=cluster_id,
                topic_id=(topic_ids or {}).get((t, p)),
                leader_epoch=(leader_epochs or {}).get((t, p)),
            )
            producer.produce(
                self.topic, value=value, key=key, headers=headers, on_delivery=delivered
            )
        remaining = producer.flush(timeout)
        if remaining or failures:
            what = failures[0] if failures else f"{remaining} not acknowledged in {timeout:.0f} s"
            raise KafkaClientError(
                f"writing positions to {self.topic} failed: {what}", retriable=True
            )
