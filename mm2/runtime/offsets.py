"""Connector offsets in Kafka Connect's REST shape, read and changed for STOPPED connectors.

A change is checked as Connect's MirrorSourceConnector checks it (a partition map of the
source cluster, topic and partition; an offset that is a Java long), and more: the topic must
be one the connector mirrors and the partition must exist on the source, so that a typo cannot
leave a position nothing reads, or one that stops a partition. Deleting a position (a null
offset) is allowed for any well-formed partition, to clean up what is no longer there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from mm2.config.model import Flow
from mm2.copy.position_record import StoredPositions
from mm2.errors import BadRequestError
from mm2.policies.filter import should_replicate_topic
from mm2.records.connect_offsets import MirrorSourcePartition

__all__ = ["ConnectorOffset", "MirrorSourceOffsets", "OffsetStore", "Positions"]

Partition = dict[str, str | int]
_LONG_MAX = 2**63 - 1


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
    if partition > _LONG_MAX:
        raise BadRequestError("partition must be a Java long", {"partition": [repr(p)]})
    if p["cluster"] != cluster:
        raise BadRequestError(
            f"cluster must be the source cluster alias {cluster!r}", {"cluster": [repr(p)]}
        )
    return MirrorSourcePartition(cluster, topic, partition)


def _offset(entry: ConnectorOffset) -> int:
    """N of `{"offset": N}`: a Java long, at least -1 (nothing copied yet)."""
    assert entry.offset is not None
    value = entry.offset.get("offset")
    if set(entry.offset) != {"offset"} or not isinstance(value, int) or isinstance(value, bool):
        raise BadRequestError(
            'an offset is {"offset": N}, N the last offset already copied',
            {"offset": [repr(entry.offset)]},
        )
    if not -1 <= value <= _LONG_MAX:
        raise BadRequestError(
            f"offset {value} is out of range: N is a Java long, at least -1 (nothing copied; "
            "the same as no position) and at most 2^63-1",
            {"offset": [repr(entry.offset)]},
        )
    return value


def _check_partitions(
    config: Mapping[str, str], location: Positions, partitions: Sequence[tuple[str, int]]
) -> None:
    """Each partition belongs to a topic the connector mirrors that exists on the source."""
    if not partitions:
        return
    flow = Flow.for_connector(config)
    policy, topic_filter = flow.replication_policy(), flow.topic_filter()
    heartbeats = flow.settings.source.heartbeats_replication_enabled
    counts = location.source_topics()
    for topic, partition in partitions:
        where = f"{topic}-{partition}"
        if not should_replicate_topic(
            topic,
            policy=policy,
            topic_filter=topic_filter,
            target_alias=flow.target,
            heartbeats_replication=heartbeats,
        ):
            raise BadRequestError(
                f"topic {topic!r} is not mirrored by this connector (see its topics, "
                "topics.exclude and replication policy)",
                {"partition": [f"{where}: topic not mirrored"]},
            )
        count = counts.get(topic)
        if count is None:
            raise BadRequestError(
                f"topic {topic!r} does not exist on source cluster {flow.source!r}",
                {"partition": [f"{where}: no such topic"]},
            )
        if partition >= count:
            raise BadRequestError(
                f"topic {topic!r} has {count} partition(s) on source cluster {flow.source!r}: "
                f"partition {partition} does not exist",
                {"partition": [f"{where}: no such partition"]},
            )


class Positions(Protocol):
    """A flow's stored source positions (mm2.copy.positions.PositionsTopic)."""

    @property
    def source_alias(self) -> str: ...

    def read(self) -> StoredPositions: ...

    def write(self, positions: Mapping[tuple[str, int], int | None]) -> None: ...

    def source_topics(self) -> Mapping[str, int]:
        """The partition count of every topic on the source cluster."""
        ...


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
            changes[(sp.topic, sp.partition)] = None if entry.offset is None else _offset(entry)
        _check_partitions(config, location, [tp for tp, o in changes.items() if o is not None])
        location.write({tp: None if o is None or o < 0 else o for tp, o in changes.items()})

    def reset(self, config: Mapping[str, str]) -> None:
        location = self._location(config)
        location.write(dict.fromkeys(location.read().offsets))
