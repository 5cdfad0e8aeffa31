"""A flow's positions: where each copy task resumes, kept in Connect's offsets topic on the target.

Apache MM2's dedicated mode keeps MirrorSourceConnector's positions in
`mm2-offsets.<source>.internal`, keyed `["MirrorSourceConnector",{"cluster":..,"partition":..,
"topic":..}]` with value `{"offset":N}` (the last upstream offset copied). Keys are placed by
Java's default partitioner (murmur2 of the key bytes), which librdkafka's `murmur2_random`
reproduces for non-null keys, so the newest value of a key is the last one in its partition
whichever of the two mirrors wrote it.

mm2 adds headers Apache ignores: the source cluster's id (positions of another cluster are
refused, never applied) and what the write copied (`mm2.stats`, mm2.copy.stats).

`PositionsTopic` is the one handle to that topic: the planner, the copy tasks (Spark pickles
it), REST and the command-line tools all use it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from confluent_kafka import KafkaError, Producer

from mm2.copy.positions_reader import KeyPartitions, PositionsReader
from mm2.copy.ready import CopyReady, decode_ready
from mm2.copy.source_ends import SourceEnds, decode_source_ends
from mm2.copy.spec import BEGINNING
from mm2.copy.stats import CopyStats
from mm2.errors import ConfigError, KafkaClientError, RecordFormatError
from mm2.kafka.admin import describe_cluster
from mm2.kafka.failure import ClientLog, cluster_label
from mm2.kafka.topics import TopicAdmin
from mm2.records import TP
from mm2.records.connect_offsets import (
    ConnectOffsetKey,
    MirrorSourcePartition,
    decode_offset_value,
    encode_offset_value,
)
from mm2.records.java_partitioner import java_partition

__all__ = [
    "CLUSTER_ID_HEADER",
    "CONNECTOR",
    "LEADER_EPOCH_HEADER",
    "PARTITIONER",
    "STATS_HEADER",
    "TOPIC_ID_HEADER",
    "PositionRecord",
    "PositionsTopic",
    "StoredPositions",
    "decode_position",
    "position_key",
    "position_record",
]

CONNECTOR = "MirrorSourceConnector"
CLUSTER_ID_HEADER = "mm2.source.cluster.id"
# The source topic's id, beside Apache's value (Apache reads no headers, so it still reads ours):
# a position stored for a topic since deleted and re-created under the same name is told apart.
TOPIC_ID_HEADER = "mm2.source.topic.id"
# The leader epoch of the record the position follows (KIP-320): a copy task that resumes from
# it asks the source's leader whether its log still holds that record there, so a log truncated
# (an unclean leader election) while the mirror was away is found even when refilled since.
LEADER_EPOCH_HEADER = "mm2.source.leader.epoch"
STATS_HEADER = "mm2.stats"
# Java's default partitioner for keyed records; Connect's offset writer relies on it.
PARTITIONER = {"partitioner": "murmur2_random"}

if TYPE_CHECKING:  # an executor's Python has mm2 and confluent-kafka, not mm2.config's needs
    from mm2.config import Flow

Headers = list[tuple[str, str | bytes | None]]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PositionRecord:
    """One decoded record of the offsets topic that belongs to a source connector and alias."""

    topic: str
    partition: int
    offset: int | None  # None: a tombstone (the position was deleted)
    cluster_id: str | None  # None: written by Apache MM2 (or before mm2 tagged it)
    stats: CopyStats | None  # its target_topic is unknown here: ""
    topic_id: str | None = None  # None: written by Apache MM2, or before mm2 tagged it
    leader_epoch: int | None = None  # None: not known (Apache MM2's, or an older mm2's)


def position_key(connector: str, cluster: str, topic: str, partition: int) -> bytes:
    """Connect's key of a source partition's position: `["<connector>",{"cluster":…,…}]`."""
    return ConnectOffsetKey(connector, MirrorSourcePartition(cluster, topic, partition)).to_bytes()


def position_record(
    connector: str,
    cluster: str,
    topic: str,
    partition: int,
    offset: int | None,
    *,
    cluster_id: str | None,
    stats: CopyStats | None = None,
    topic_id: str | None = None,
    leader_epoch: int | None = None,
) -> tuple[bytes, bytes | None, Headers]:
    """(key, value, headers) of a position; offset None makes a tombstone."""
    key = position_key(connector, cluster, topic, partition)
    value = None if offset is None else encode_offset_value(offset)
    headers: Headers = []
    if cluster_id:
        headers.append((CLUSTER_ID_HEADER, cluster_id.encode()))
    if topic_id:
        headers.append((TOPIC_ID_HEADER, topic_id.encode()))
    if leader_epoch is not None and leader_epoch >= 0:
        headers.append((LEADER_EPOCH_HEADER, str(leader_epoch).encode()))
    if stats is not None:
        headers.append((STATS_HEADER, stats.header()))
    return key, value, headers


def decode_position(
    key: bytes | None, value: bytes | None, headers: object, *, connector: str, cluster: str
) -> PositionRecord | None:
    """The position a record of the offsets topic holds, if it is one of `connector`'s for
    source alias `cluster` (other connectors' and foreign records: None)."""
    if key is None:
        return None
    try:
        decoded = ConnectOffsetKey.from_bytes(key)
        offset = None if value is None else decode_offset_value(value)
    except RecordFormatError:
        return None
    part = decoded.partition
    if (
        decoded.connector != connector
        or not isinstance(part, MirrorSourcePartition)
        or part.cluster != cluster
    ):
        return None
    found: dict[str, bytes] = {}
    if isinstance(headers, list):
        for name, raw in headers:
            if isinstance(raw, bytes):
                found[str(name)] = raw
    raw_id, raw_stats = found.get(CLUSTER_ID_HEADER), found.get(STATS_HEADER)
    stats = None
    if raw_stats is not None:
        stats = CopyStats.from_header(
            raw_stats, topic=part.topic, partition=part.partition, target_topic="",
            position=-1 if offset is None else offset,
        )  # fmt: skip
    raw_topic_id = found.get(TOPIC_ID_HEADER)
    raw_epoch = found.get(LEADER_EPOCH_HEADER, b"")
    return PositionRecord(
        part.topic,
        part.partition,
        offset,
        None if raw_id is None else raw_id.decode(errors="replace"),
        stats,
        None if raw_topic_id is None else raw_topic_id.decode(errors="replace"),
        int(raw_epoch) if raw_epoch.isdigit() else None,
    )


class StoredPositions:
    """The latest position of each source partition, as the offsets topic says."""

    def __init__(self) -> None:
        self.offsets: dict[TP, int] = {}
        self.cluster_ids: dict[TP, str | None] = {}
        self.topic_ids: dict[TP, str] = {}  # where the position says which topic it is of
        # where it says the leader epoch of the record it follows
        self.leader_epochs: dict[TP, int] = {}
        # The source's end offset as last known, and when it was read (epoch ms): the newest
        # of what copy tasks saw beside their positions (a rewritten position carries none)
        # and what the mirror's lag reader read (mm2.copy.source_ends), by that time.
        self.source_ends: dict[TP, tuple[int, int]] = {}

    def apply(self, records: Iterable[PositionRecord]) -> None:
        for r in records:
            tp = (r.topic, r.partition)
            self.topic_ids.pop(tp, None)
            self.leader_epochs.pop(tp, None)
            if r.stats is not None and r.stats.source_end > 0:
                self._end(tp, r.stats.source_end, r.stats.source_end_ms)
            if r.offset is None:
                self.offsets.pop(tp, None)
                self.cluster_ids.pop(tp, None)
                self.source_ends.pop(tp, None)
            else:
                self.offsets[tp] = r.offset
                self.cluster_ids[tp] = r.cluster_id
                if r.topic_id:
                    self.topic_ids[tp] = r.topic_id
                if r.leader_epoch is not None:
                    self.leader_epochs[tp] = r.leader_epoch

    def apply_ends(self, ends: SourceEnds) -> None:
        """The source's ends the mirror read at `ends.read_at_ms`, where they are newer than
        what is known (several processes may write them, in any order)."""
        for tp, end in ends.ends.items():
            self._end(tp, end, ends.read_at_ms)

    def _end(self, tp: TP, end: int, read_at_ms: int) -> None:
        known = self.source_ends.get(tp)
        if known is None or read_at_ms >= known[1]:
            self.source_ends[tp] = (end, read_at_ms)

    def of_topic(self, tp: TP, topic_id: str) -> int | None:
        """The stored position of `tp` if it was stored for the topic whose id is `topic_id`
        (or either id is unknown); None for a topic deleted and re-created since."""
        stored = self.topic_ids.get(tp)
        if stored and topic_id and stored != topic_id:
            return None
        return self.offsets.get(tp)

    def next_offset(self, tp: TP, topic_id: str, unstored: int) -> int:
        """Where to copy `tp` from: after its stored position; `unstored` where none is stored;
        BEGINNING where the position stored is of a topic since deleted and re-created."""
        last = self.of_topic(tp, topic_id)
        if last is not None:
            return last + 1
        return BEGINNING if tp in self.offsets else unstored

    def foreign(self, cluster_id: str) -> dict[TP, str]:
        """Partitions whose position was written for another source cluster, with its id."""
        return {
            tp: cid
            for tp, cid in self.cluster_ids.items()
            if cid is not None and cid != cluster_id and tp in self.offsets
        }


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
                self.flow, self.topic,
            )  # fmt: skip
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
    ) -> PositionsReader[PositionRecord]:
        """A reader of the topic from its start (close it when done); `on_ready` is given the
        notices of this flow's copy tasks that they copy (mm2.copy.ready), `on_ends` the
        source's ends the mirror read for this flow (mm2.copy.source_ends)."""

        def decode(
            key: bytes | None, value: bytes | None, headers: object
        ) -> PositionRecord | None:
            if on_ready is not None:
                ready = decode_ready(key, value)
                if ready is not None:
                    if ready.flow == self.flow:
                        on_ready(ready)
                    return None
            if on_ends is not None:
                ends = decode_source_ends(key, value)
                if ends is not None:
                    if ends.flow == self.flow:
                        on_ends(ends)
                    return None
            return decode_position(
                key, value, headers, connector=self.connector, cluster=self.source_alias
            )

        return PositionsReader(self.consumer_config, self.admin_config, self.topic, decode=decode)

    def holding(self, partitions: Iterable[TP]) -> KeyPartitions:
        """For a partition count, the partitions of the topic that hold the positions of
        `partitions` (keyed as Connect keys them, placed by Java's partitioner) and partition 0
        (the copy tasks' notices and the planner's assignment records)."""
        keys = [position_key(self.connector, self.source_alias, t, p) for t, p in partitions]

        def of(count: int) -> set[int]:
            return {0, *(java_partition(key, count) for key in keys)}

        return of

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
        committed now, not waiting for transactions still open (PositionsReader). The
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
            "acks": "all", "enable.idempotence": True, "allow.auto.create.topics": False,
            **self.producer_config,
        }  # fmt: skip
        producer = Producer(
            {**settings, **PARTITIONER, "logger": ClientLog(cluster_label(self.producer_config))}
        )
        for (t, p), offset in sorted(positions.items()):
            key, value, headers = position_record(
                self.connector, self.source_alias, t, p, offset, cluster_id=cluster_id,
                topic_id=(topic_ids or {}).get((t, p)),
                leader_epoch=(leader_epochs or {}).get((t, p)),
            )  # fmt: skip
            producer.produce(
                self.topic, value=value, key=key, headers=headers, on_delivery=delivered
            )
        remaining = producer.flush(timeout)
        if remaining or failures:
            what = failures[0] if failures else f"{remaining} not acknowledged in {timeout:.0f} s"
            raise KafkaClientError(
                f"writing positions to {self.topic} failed: {what}", retriable=True
            )
