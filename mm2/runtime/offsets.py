"""Connector offsets in Kafka Connect's REST shape, read and changed for STOPPED connectors."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from mm2.pipeline.offset_log import SparkOffsetLog
from mm2.records.connect_offsets import MirrorSourcePartition
from mm2.runtime.errors import BadRequestError

__all__ = ["ConnectorOffset", "MirrorSourceOffsets", "OffsetStore"]

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


class MirrorSourceOffsets:
    """MirrorSourceConnector's offsets: the Spark checkpoint's committed positions.

    Apache stores the last replicated upstream offset, and a restart reads from offset + 1;
    the checkpoint stores that next offset, so the two differ by one.
    """

    def __init__(self, checkpoint_dir: Callable[[Mapping[str, str]], Path]) -> None:
        self._checkpoint_dir = checkpoint_dir

    def _log(self, config: Mapping[str, str]) -> SparkOffsetLog:
        return SparkOffsetLog(self._checkpoint_dir(config))

    def read(self, config: Mapping[str, str]) -> list[ConnectorOffset]:
        cluster = config["source.cluster.alias"]
        return [
            ConnectorOffset(
                {"cluster": cluster, "partition": partition, "topic": topic},
                {"offset": position - 1},
            )
            for (topic, partition), position in sorted(self._log(config).committed().items())
            if position > 0
        ]

    def alter(self, config: Mapping[str, str], offsets: Sequence[ConnectorOffset]) -> None:
        cluster = config["source.cluster.alias"]
        log = self._log(config)
        positions = log.committed()
        for entry in offsets:
            sp = _source_partition(entry, cluster)
            if entry.offset is None:
                positions.pop((sp.topic, sp.partition), None)
                continue
            value = entry.offset.get("offset")
            if set(entry.offset) != {"offset"} or not isinstance(value, int) or value < -1:
                raise BadRequestError(
                    'an offset is {"offset": N} with N >= -1 (the last offset already copied)',
                    {"offset": [repr(entry.offset)]},
                )
            positions[(sp.topic, sp.partition)] = value + 1
        log.write(positions)

    def reset(self, config: Mapping[str, str]) -> None:
        self._log(config).reset()
