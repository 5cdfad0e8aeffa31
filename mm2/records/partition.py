"""The small client-side value types the records speak in: TopicPartition and OffsetAndMetadata."""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["TP", "OffsetAndMetadata", "TopicPartition"]

# A partition as a plain (topic, partition) pair: the key of the dictionaries of the copy path,
# the planner and the clients.
TP = tuple[str, int]


class TopicPartition(NamedTuple):
    """A topic name and partition number, as Kafka's TopicPartition."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


class OffsetAndMetadata(NamedTuple):
    """A committed consumer-group position; metadata is never None (Java turns null into "")."""

    offset: int
    metadata: str = ""
