"""One position record of Connect's offsets topic: its key, its value and mm2's headers, and the
latest position of each source partition they add up to (see mm2.copy.positions for the topic).

Apache MM2 keys MirrorSourceConnector's positions `["MirrorSourceConnector",{"cluster":..,
"partition":..,"topic":..}]` with value `{"offset":N}` (the last upstream offset copied); mm2
adds headers Apache ignores: the source cluster's id, the source topic's id, the leader epoch of
the record the position follows, and what the write copied (`mm2.stats`, mm2.copy.stats)."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

from mm2.copy.source_ends import SourceEnds
from mm2.copy.spec import BEGINNING
from mm2.copy.stats import CopyStats
from mm2.errors import RecordFormatError
from mm2.records import TP
from mm2.records.connect_offsets import (
    ConnectOffsetKey,
    MirrorSourcePartition,
    decode_offset_value,
    encode_offset_value,
)

__all__ = [
    "CLUSTER_ID_HEADER",
    "CONNECTOR",
    "LEADER_EPOCH_HEADER",
    "PARTITIONER",
    "STATS_HEADER",
    "TOPIC_ID_HEADER",
    "PositionRecord",
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
            raw_stats,
            topic=part.topic,
            partition=part.partition,
            target_topic="",
            position=-1 if offset is None else offset,
        )
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
