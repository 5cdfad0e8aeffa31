"""Where a flow's source positions live (Connect's offsets topic on the target) and how to
read and change them; the source task, REST and the tools share it."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

from mm2.config import Flow
from mm2.config.model import SOURCE
from mm2.errors import KafkaClientError
from mm2.kafka.admin import describe_cluster
from mm2.kafka.offset_store import (
    OffsetTail,
    SourcePositions,
    ensure_offsets_topic,
    write_positions,
)
from mm2.kafka.topics import TopicAdmin

__all__ = ["PositionsLocation", "positions_location"]

CONNECTOR = "MirrorSourceConnector"

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PositionsLocation:
    """The offsets topic of a flow, the clients that reach it and the keys it uses."""

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

    def ensure_topic(self) -> None:
        """Create the topic unless it exists. Without offset.storage.replication.factor, a
        cluster of fewer than 3 brokers gets its own default.replication.factor (Connect would
        fail to start there), with a warning."""
        try:
            ensure_offsets_topic(
                self.admin_config,
                self.topic,
                partitions=self.partitions,
                replication_factor=self.replication_factor or 3,
            )
        except KafkaClientError as exc:
            if self.replication_factor or "INVALID_REPLICATION_FACTOR" not in str(exc):
                raise
            log.warning(
                "%s: %s created with the target's default.replication.factor: it has fewer "
                "than 3 brokers (set offset.storage.replication.factor to choose)",
                self.flow, self.topic,
            )  # fmt: skip
            ensure_offsets_topic(
                self.admin_config, self.topic, partitions=self.partitions, replication_factor=-1
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

    def tail(self) -> OffsetTail:
        return OffsetTail(
            self.consumer_config,
            self.admin_config,
            self.topic,
            connector=self.connector,
            cluster=self.source_alias,
        )

    def read(self) -> SourcePositions:
        """Every position the topic holds now (the topic created first if it is missing)."""
        self.ensure_topic()
        tail = self.tail()
        try:
            positions = SourcePositions()
            positions.apply(tail.read_to_end())
            return positions
        finally:
            tail.close()

    def write(
        self, positions: Mapping[tuple[str, int], int | None], *, cluster_id: str | None = None
    ) -> None:
        """Set (or with None delete) positions, tagged with the source cluster's id (asked for
        when not given, left out if the source does not answer)."""
        self.ensure_topic()
        if cluster_id is None:
            try:
                cluster_id = self.source_cluster_id()
            except KafkaClientError:
                cluster_id = None
        write_positions(
            self.producer_config,
            self.topic,
            connector=self.connector,
            cluster=self.source_alias,
            cluster_id=cluster_id,
            positions=positions,
        )


def positions_location(flow: Flow) -> PositionsLocation:
    """`offset.storage.topic` (default `mm2-offsets.<source>.internal`) on the target."""
    config = flow.connector_config()
    topic = config.get("offset.storage.topic") or f"mm2-offsets.{flow.source}.internal"
    return PositionsLocation(
        flow=flow.name,
        topic=topic,
        connector=config.get("name") or CONNECTOR,
        source_alias=flow.source,
        partitions=flow.get_int("offset.storage.partitions", 25),
        replication_factor=flow.get_int("offset.storage.replication.factor", 0),
        admin_config=flow.target_admin_config(label="offsets-admin"),
        consumer_config=flow.target_consumer_config(SOURCE, "offsets-consumer"),
        producer_config=flow.target_producer_config(label="offsets-producer"),
        source_admin_config=flow.source_admin_config(),
    )
