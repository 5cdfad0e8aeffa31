"""Heartbeat: proof of life of one source->target flow, written to the target (version 0)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from mm2.records import wire

__all__ = ["Heartbeat"]


@dataclass(frozen=True, slots=True)
class Heartbeat:
    """Apache MM2's `Heartbeat`.

    Key: sourceClusterAlias STRING, targetClusterAlias STRING.
    Value: version INT16 (0), timestamp INT64 (epoch ms).
    """

    VERSION: ClassVar[int] = 0

    source_cluster_alias: str
    target_cluster_alias: str
    timestamp: int

    def to_key_bytes(self) -> bytes:
        return wire.string("sourceClusterAlias", self.source_cluster_alias) + wire.string(
            "targetClusterAlias", self.target_cluster_alias
        )

    def to_value_bytes(self) -> bytes:
        return wire.int16("version", self.VERSION) + wire.int64("timestamp", self.timestamp)

    @classmethod
    def from_record(cls, key: bytes, value: bytes) -> Heartbeat:
        """Decode a heartbeats-topic record; any version is read as v0, as Java does."""
        k = wire.Reader(key, "heartbeat key")
        source = k.string("sourceClusterAlias")
        target = k.string("targetClusterAlias")
        v = wire.Reader(value, "heartbeat value")
        v.int16("version")
        timestamp = v.int64("timestamp")
        return cls(source, target, timestamp)
