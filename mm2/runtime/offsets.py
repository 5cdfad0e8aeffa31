"""Connector offsets in Kafka Connect's REST shape, read and changed for STOPPED connectors."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from mm2.kafka.offset_store import SourcePositions
from mm2.records.connect_offsets import MirrorSourcePartition
from mm2.runtime.errors import BadRequestError

__all__ = ["ConnectorOffset", "MirrorSourceOffsets", "OffsetStore", "Positions"]

Partition = dict[str, str | int]


@dataclass(frozen=True)
class ConnectorOffset:
    """One entry of `{"offsets": [{"partition": {...}, "offset": {...} | null}]}`."""

    partition: Partition
    offset: dict[str, int] | None


class OffsetStore(Protocol):
    """Where a connector plugin keeps its source offsets; `config` is the connector's config."""

    def read(self, config: Mapping[str, str]) -> list[ConnectorOffset]: ...

    def alter(self, config: Mapping[str, str], offsets: Sequence[ConnectorOffset]) -> None: ...

    def reset(self, config: Mapping[str, str]) -> None: ...


def _source_partition(entry: ConnectorOffset, cluster: str) -> MirrorSourcePartition:
    p = entry.partition
    topic, partition = p.get("topic"), p.get("partition")
    if set(p) != {"cluster", "topic", "partition"} or not isinstance(topic, str):
        raise BadRequestError(
            'a MirrorSourceConnector partition is {"cluster": str, "topic": str, "partition": int}',
            {"partition": [f"got {p!r}"]},
        )
    if not isinstance(partition, int) or isinstance(partition, bool) or partition < 0:
        raise BadRequestError("partition must be a non-negative integer", {"partition": [repr(p)]})
    if p["cluster"] != cluster:
        raise BadRequestError(
            f"cluster must be the source cluster alias {cluster!r}", {"cluster": [repr(p)]}
        )
    return MirrorSourcePartition(cluster, topic, partition)


class Positions(Protocol):
    """A flow's stored source positions (mm2.client.positions.PositionsLocation)."""

    @property
    def source_alias(self) -> str: ...

    def read(self) -> SourcePositions: ...

    def write(self, positions: Mapping[tuple[str, int], int | None]) -> None: ...


class MirrorSourceOffsets:
    """MirrorSourceConnector's offsets: Connect's offsets topic on the target, as Apache's.

    The value is the last upstream offset copied; the next start reads from offset + 1.
    """

    def __init__(self, location: Callable[[Mapping[str, str]], Positions]) -> None:
        self._location = location

    def read(self, config: Mapping[str, str]) -> list[ConnectorOffset]:
        location = self._location(config)
        cluster = location.source_alias
        return [
            ConnectorOffset(
                {"cluster": cluster, "partition": partition, "topic": topic}, {"offset": offset}
            )
            for (topic, partition), offset in sorted(location.read().offsets.items())
        ]

    def alter(self, config: Mapping[str, str], offsets: Sequence[ConnectorOffset]) -> None:
        location = self._location(config)
        changes: dict[tuple[str, int], int | None] = {}
        for entry in offsets:
            sp = _source_partition(entry, location.source_alias)
            if entry.offset is None:
                changes[(sp.topic, sp.partition)] = None
                continue
            value = entry.offset.get("offset")
            if set(entry.offset) != {"offset"} or not isinstance(value, int) or value < -1:
                raise BadRequestError(
                    'an offset is {"offset": N} with N >= -1 (the last offset already copied)',
                    {"offset": [repr(entry.offset)]},
                )
            # -1 (nothing copied yet): the same as no position, as Apache's task reads it.
            changes[(sp.topic, sp.partition)] = None if value < 0 else value
        location.write(changes)

    def reset(self, config: Mapping[str, str]) -> None:
        location = self._location(config)
        location.write(dict.fromkeys(location.read().offsets))
