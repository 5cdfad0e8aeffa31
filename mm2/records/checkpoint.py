"""Checkpoint: a consumer group's translated position on one downstream partition (version 0)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from mm2.records import wire
from mm2.records.partition import OffsetAndMetadata, TopicPartition

__all__ = ["Checkpoint"]


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """Apache MM2's `Checkpoint`; `topic` is the downstream (renamed) topic name.

    Key: group STRING, topic STRING, partition INT32.
    Value: version INT16 (0), upstreamOffset INT64, offset INT64, metadata STRING.
    A None metadata is stored as "" (Java does the same).
    """

    VERSION: ClassVar[int] = 0

    group_id: str
    topic: str
    partition: int
    upstream_offset: int
    downstream_offset: int
    metadata: str = ""

    def __post_init__(self) -> None:
        # Callers holding a client's OffsetAndMetadata may pass a null metadata through.
        if self.metadata is None:
            object.__setattr__(self, "metadata", "")

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)

    def offset_and_metadata(self) -> OffsetAndMetadata:
        """What clients see: the downstream offset and the metadata."""
        return OffsetAndMetadata(self.downstream_offset, self.metadata)

    def to_key_bytes(self) -> bytes:
        return (
            wire.string("group", self.group_id)
            + wire.string("topic", self.topic)
            + wire.int32("partition", self.partition)
        )

    def to_value_bytes(self) -> bytes:
        return (
            wire.int16("version", self.VERSION)
            + wire.int64("upstreamOffset", self.upstream_offset)
            + wire.int64("offset", self.downstream_offset)
            + wire.string("metadata", self.metadata)
        )

    @classmethod
    def from_record(cls, key: bytes, value: bytes) -> Checkpoint:
        """Decode a checkpoints-topic record; any version is read as v0, as Java does."""
        k = wire.Reader(key, "checkpoint key")
        group = k.string("group")
        topic = k.string("topic")
        partition = k.int32("partition")
        v = wire.Reader(value, "checkpoint value")
        v.int16("version")
        upstream = v.int64("upstreamOffset")
        downstream = v.int64("offset")
        metadata = v.string("metadata")
        return cls(group, topic, partition, upstream, downstream, metadata)
