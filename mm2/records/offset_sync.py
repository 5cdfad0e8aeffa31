"""OffsetSync: an (upstream, downstream) offset pair of one replicated partition (no version)."""

from __future__ import annotations

from dataclasses import dataclass

from mm2.records import wire
from mm2.records.partition import TopicPartition

__all__ = ["OffsetSync"]


@dataclass(frozen=True, slots=True)
class OffsetSync:
    """Apache MM2's `OffsetSync`; `topic` is the upstream (source) topic name.

    Key: topic STRING, partition INT32. Value: upstreamOffset INT64, offset INT64.
    """

    topic: str
    partition: int
    upstream_offset: int
    downstream_offset: int

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)

    def to_key_bytes(self) -> bytes:
        return wire.string("topic", self.topic) + wire.int32("partition", self.partition)

    def to_value_bytes(self) -> bytes:
        return wire.int64("upstreamOffset", self.upstream_offset) + wire.int64(
            "offset", self.downstream_offset
        )

    @classmethod
    def from_record(cls, key: bytes, value: bytes) -> OffsetSync:
        """Decode a record of the offset-syncs topic; raises RecordFormatError if malformed."""
        k = wire.Reader(key, "offset sync key")
        topic = k.string("topic")
        partition = k.int32("partition")
        v = wire.Reader(value, "offset sync value")
        upstream = v.int64("upstreamOffset")
        downstream = v.int64("offset")
        return cls(topic, partition, upstream, downstream)
