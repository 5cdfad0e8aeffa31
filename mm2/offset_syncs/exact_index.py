"""Exact offset translation between consecutive offset syncs.

Apache's store keeps 64 syncs per partition and translates any offset past a sync to
`sync.down + 1`, so a group that failed over re-reads everything since that sync. We do better
where the writer proves it safe.

Our writer (mm2/connectors/offset_syncs.py) knows the copy runs: stretches where upstream and
downstream offsets both advance by one. It writes a sync at the start and the end of every run
(plus Apache's own rule syncs), and tags each with a `mm2.prev-sync` header: the previous sync
it wrote for the partition, and whether the records between the two are one contiguous run
(RUN) or a hop from the end of one run to the start of the next (HOP: no mirrored upstream
record lies strictly between them). When the reader's latest sync for the partition is exactly
that previous sync, the stretch S1 = (u1, d1) .. S2 = (u2, d2) is proven:

* RUN, with u2 - u1 == d2 - d1: a group committed at c in [u1, u2] resumes at d1 + (c - u1);
* HOP, with d2 == d1 + 1: c in (u1, u2] resumes at d2, the mirror of the next record.

Both are exact: the group re-reads nothing and skips nothing. A missing sync (a failed write,
compaction, a restart of the writer) or a foreign writer (no header) only breaks the proof:
that stretch falls back to Apache's translation.

Proven runs that touch merge, so a partition mirrored without gaps is one segment however
long. The index is plain data with a JSON form, so the checkpoint task can persist it and
resume without rereading the offset-syncs topic from the beginning.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Final

from mm2.records import OffsetSync, TopicPartition

__all__ = [
    "HOP",
    "MAX_SEGMENTS_PER_PARTITION",
    "PREV_SYNC_HEADER",
    "RUN",
    "ExactIndex",
    "PrevSync",
    "Segment",
    "decode_prev_sync",
    "encode_prev_sync",
]

PREV_SYNC_HEADER: Final = "mm2.prev-sync"
MAX_SEGMENTS_PER_PARTITION: Final = 4096

RUN: Final = 1
HOP: Final = 0

_HEADER = struct.Struct(">qqb")


@dataclass(frozen=True, slots=True)
class PrevSync:
    """What a sync's header says of the sync written before it for the same partition."""

    upstream: int
    downstream: int
    kind: int  # RUN or HOP


def encode_prev_sync(prev: PrevSync) -> bytes:
    """The header value: previous upstream and downstream offsets (INT64 each), kind (INT8)."""
    return _HEADER.pack(prev.upstream, prev.downstream, prev.kind)


def decode_prev_sync(value: bytes | None) -> PrevSync | None:
    """The header's content; None when absent or malformed (a foreign or older writer)."""
    if value is None or len(value) != _HEADER.size:
        return None
    up, down, kind = _HEADER.unpack(value)
    if kind not in (RUN, HOP):
        return None
    return PrevSync(int(up), int(down), int(kind))


@dataclass(frozen=True, slots=True)
class Segment:
    """Proven: upstream [u1, u2] maps onto downstream [d1, d2], a run or a hop."""

    u1: int
    d1: int
    u2: int
    d2: int
    hop: bool = False

    def translate(self, offset: int) -> int:
        if self.hop:
            return self.d1 if offset == self.u1 else self.d2
        return self.d1 + (offset - self.u1)


class _Partition:
    __slots__ = ("last", "segments")

    def __init__(self) -> None:
        self.last: tuple[int, int] | None = None
        self.segments: list[Segment] = []


class ExactIndex:
    """Proven segments per upstream partition, from syncs fed in log order."""

    def __init__(self, max_segments: int = MAX_SEGMENTS_PER_PARTITION) -> None:
        self._max = max_segments
        self._parts: dict[TopicPartition, _Partition] = {}

    def add(self, sync: OffsetSync, prev: PrevSync | None) -> None:
        """Apply one sync; `prev` is its decoded `mm2.prev-sync` header, if it had one."""
        part = self._parts.setdefault(sync.topic_partition, _Partition())
        up, down = sync.upstream_offset, sync.downstream_offset
        last = part.last
        if last is not None and down < last[1]:
            # A truncated or recreated target: old mappings no longer hold.
            part.segments.clear()
        elif last is not None and up < last[0]:
            # A batch copied again after a crash, or a recreated source topic: mappings below
            # `up` still lead to records (first copies, or re-reads); the rest will be redone.
            part.segments[:] = [s for s in part.segments if s.u1 < up]
        elif (
            last is not None
            and prev is not None
            and (prev.upstream, prev.downstream) == last
            and up > last[0]
        ):
            seg = _proven(last, up, down, prev.kind)
            if seg is not None:
                self._append(part, seg)
        part.last = (up, down)

    def _append(self, part: _Partition, seg: Segment) -> None:
        segments = part.segments
        if segments:
            tail = segments[-1]
            touching = (tail.u2, tail.d2) == (seg.u1, seg.d1)
            if touching and not tail.hop and not seg.hop:
                segments[-1] = Segment(tail.u1, tail.d1, seg.u2, seg.d2)
                return
        segments.append(seg)
        if len(segments) > self._max:
            del segments[0]

    def segment_for(self, tp: TopicPartition, offset: int) -> Segment | None:
        """The proven segment holding `offset`, if any (the latest one when two touch)."""
        part = self._parts.get(tp)
        if part is None:
            return None
        segments = part.segments
        lo, hi = 0, len(segments)
        while lo < hi:  # the last segment whose u1 <= offset
            mid = (lo + hi) // 2
            if segments[mid].u1 <= offset:
                lo = mid + 1
            else:
                hi = mid
        if lo == 0:
            return None
        seg = segments[lo - 1]
        return seg if offset <= seg.u2 else None

    def translate(self, tp: TopicPartition, offset: int) -> int | None:
        """The exact downstream offset for a committed `offset`, or None when not proven."""
        seg = self.segment_for(tp, offset)
        return None if seg is None else seg.translate(offset)

    def segments(self, tp: TopicPartition) -> list[Segment]:
        part = self._parts.get(tp)
        return list(part.segments) if part else []

    def last_sync(self, tp: TopicPartition) -> tuple[int, int] | None:
        part = self._parts.get(tp)
        return part.last if part else None

    # -- persistence --
    def to_json(self) -> list[dict[str, object]]:
        return [
            {
                "topic": tp.topic,
                "partition": tp.partition,
                "last": list(part.last) if part.last else None,
                "segments": [[s.u1, s.d1, s.u2, s.d2, int(s.hop)] for s in part.segments],
            }
            for tp, part in sorted(self._parts.items())
        ]

    @classmethod
    def from_json(cls, data: object, max_segments: int = MAX_SEGMENTS_PER_PARTITION) -> ExactIndex:
        """Rebuild from `to_json()`; raises ValueError on anything else."""
        index = cls(max_segments)
        if not isinstance(data, list):
            raise ValueError("exact index: expected a list of partitions")
        for entry in data:
            if not isinstance(entry, dict):
                raise ValueError("exact index: expected an object per partition")
            part = _Partition()
            last = entry.get("last")
            part.last = (int(last[0]), int(last[1])) if last else None
            part.segments = [
                Segment(int(a), int(b), int(c), int(d), bool(h))
                for a, b, c, d, h in entry.get("segments", [])
            ]
            index._parts[TopicPartition(str(entry["topic"]), int(entry["partition"]))] = part
        return index


def _proven(last: tuple[int, int], up: int, down: int, kind: int) -> Segment | None:
    u1, d1 = last
    if kind == RUN and up - u1 == down - d1:
        return Segment(u1, d1, up, down)
    if kind == HOP and down == d1 + 1:
        return Segment(u1, d1, up, down, hop=True)
    return None
