"""Exact offset translation between consecutive offset syncs.

Apache's store keeps 64 syncs per partition and translates any offset past a sync to
`sync.down + 1`, so a group that failed over re-reads everything since that sync. We do better
where the writer proves it safe.

Our writer (mm2/offset_syncs/emitter.py and sync_trail.py) knows the copy runs: stretches where
upstream and downstream offsets both advance by one. It writes a sync at the start and the end
of every run (plus Apache's own rule syncs), and tags each with a `mm2.prev-sync` header: the
previous sync it wrote for the partition, and whether the records between the two are one
contiguous run (RUN) or a hop from the end of one run to the start of the next (HOP: no
mirrored upstream record lies strictly between them). When the reader's latest sync for the
partition is exactly that previous sync, the stretch S1 = (u1, d1) .. S2 = (u2, d2) is proven:

* RUN, with u2 - u1 == d2 - d1: a group committed at c in [u1, u2] resumes at d1 + (c - u1);
* HOP, with d2 > d1: c in (u1, u2] resumes at d2, the mirror of the next record. Offsets
  strictly between d1 and d2 (when d2 > d1 + 1) hold no copy: transaction markers, or a batch
  the same writer aborted. Resuming anywhere in (d1, d2] is as exact as d2, so a hop whose
  jumps are equal (u2 - u1 == d2 - d1) is kept as if it were a run.

Both are exact: the group re-reads nothing and skips nothing. A missing sync (a failed write,
compaction, a restart of the writer) or a foreign writer (no header) only breaks the proof:
that stretch falls back to Apache's translation.

Proven stretches that touch merge into one Segment (mm2.offset_syncs.segment): a chain of
points joined by runs and hops, in compact form. A partition mirrored without gaps is one run
(two points) however long; a compacted one costs one point (4 bytes) per surviving record, so
groups parked far behind the copy still translate exactly: a committed offset c resumes at the
copy of the first mirrored record at or after c. Translation is a bisection, O(log n).

Memory is bounded by MAX_OFFSETS_PER_PARTITION stored offsets per partition (a point counts
one, see segment.SEGMENT_COST for the rest), dropping the oldest segments first (a segment
holds at most POINTS_PER_SEGMENT points, so the drop is gradual). 1,000,000 keeps a compacted
partition exact for its last million surviving records - ten times a group lagging 100,000
records behind - in about 4 MB (and about 1.4 MB of JSON for small gaps), while a partition
without gaps stays a few hundred bytes however long. The index is plain data with a JSON form,
so the checkpoint task can persist it and resume without rereading the offset-syncs topic from
the beginning; snapshots of the older form (one [u1, d1, u2, d2, hop] list per segment) load.
"""

from __future__ import annotations

import struct
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass
from operator import attrgetter
from typing import Final

from mm2.offset_syncs.segment import Segment
from mm2.records import OffsetSync, TopicPartition

__all__ = [
    "HOP",
    "MAX_OFFSETS_PER_PARTITION",
    "POINTS_PER_SEGMENT",
    "PREV_SYNC_HEADER",
    "RUN",
    "ExactIndex",
    "PrevSync",
    "Segment",
    "decode_prev_sync",
    "encode_prev_sync",
]

PREV_SYNC_HEADER: Final = "mm2.prev-sync"
MAX_OFFSETS_PER_PARTITION: Final = 1_000_000
POINTS_PER_SEGMENT: Final = 4096

RUN: Final = 1
HOP: Final = 0

_HEADER = struct.Struct(">qqb")
_U1: Callable[[Segment], int] = attrgetter("u1")
_D1: Callable[[Segment], int] = attrgetter("d1")


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


class _Partition:
    __slots__ = ("cost", "last", "segments")

    def __init__(self) -> None:
        self.last: tuple[int, int] | None = None
        self.segments: list[Segment] = []  # ascending in u1 and in d1
        self.cost = 0  # stored offsets, as MAX_OFFSETS_PER_PARTITION counts them


class ExactIndex:
    """Proven segments per upstream partition, from syncs fed in log order."""

    def __init__(self, max_offsets: int = MAX_OFFSETS_PER_PARTITION) -> None:
        self._max = max_offsets
        # Small budgets get small segments, so that dropping the oldest one frees little.
        self._points = max(2, min(POINTS_PER_SEGMENT, max_offsets // 16))
        self._parts: dict[TopicPartition, _Partition] = {}

    def add(self, sync: OffsetSync, prev: PrevSync | None) -> None:
        """Apply one sync; `prev` is its decoded `mm2.prev-sync` header, if it had one."""
        part = self._parts.setdefault(sync.topic_partition, _Partition())
        up, down = sync.upstream_offset, sync.downstream_offset
        last = part.last
        if last is not None and down < last[1]:
            # A truncated or recreated target: old mappings no longer hold.
            part.segments.clear()
            part.cost = 0
        elif last is not None and up < last[0]:
            # A batch copied again after a crash, or a recreated source topic: mappings below
            # `up` still lead to records (first copies, or re-reads); the rest will be redone.
            part.segments[:] = [s for s in part.segments if s.u1 < up]
            part.cost = sum(s.cost for s in part.segments)
        elif (
            last is not None
            and prev is not None
            and (prev.upstream, prev.downstream) == last
            and _proven(last, up, down, prev.kind)
        ):
            self._extend(part, last, (up, down))
        part.last = (up, down)

    def _extend(self, part: _Partition, start: tuple[int, int], end: tuple[int, int]) -> None:
        """Add the proven stretch start .. end: to the last segment when it ends at `start`."""
        segments = part.segments
        if segments and (segments[-1].u2, segments[-1].d2) == start:
            tail = segments[-1]
            before = tail.cost
            if tail.extend(*end, self._points):
                part.cost += tail.cost - before
                self._trim(part)
                return
        seg = Segment(*start)
        if seg.extend(*end, self._points):  # False only for a stretch of 2^32 offsets or more
            segments.append(seg)
            part.cost += seg.cost
            self._trim(part)

    def _trim(self, part: _Partition) -> None:
        while part.cost > self._max and len(part.segments) > 1:
            part.cost -= part.segments.pop(0).cost

    def segment_for(self, tp: TopicPartition, offset: int) -> Segment | None:
        """The proven segment holding `offset`, if any (the latest one when two touch)."""
        seg = self._segment_at(tp, offset, _U1)
        return seg if seg is not None and offset <= seg.u2 else None

    def translate(self, tp: TopicPartition, offset: int) -> int | None:
        """The exact downstream offset for a committed `offset`, or None when not proven."""
        seg = self.segment_for(tp, offset)
        return None if seg is None else seg.translate(offset)

    def translate_back(self, tp: TopicPartition, downstream: int) -> int | None:
        """The exact upstream offset for a group committed at `downstream` on the target (the
        next record it would read there), or None when not proven (mm2.offset_syncs.reverse)."""
        seg = self._segment_at(tp, downstream, _D1)
        return seg.translate_back(downstream) if seg is not None and downstream <= seg.d2 else None

    def proven_below(self, tp: TopicPartition, offset: int) -> tuple[int, int] | None:
        """A proven copy (u, d) with u < `offset`, the end of the segment that would hold it,
        when `offset` is past that segment: a sync for the fallback, maybe nearer than
        Apache's 64 (which may hold none that old)."""
        seg = self._segment_at(tp, offset, _U1)
        return (seg.u2, seg.d2) if seg is not None and seg.u2 < offset else None

    def _segment_at(
        self, tp: TopicPartition, value: int, key: Callable[[Segment], int]
    ) -> Segment | None:
        """The last segment starting (by `key`: u1 or d1) at or before `value`, or None.
        Segments rise in both offsets, so no later one can hold `value` (of two that touch at
        it, this is the later); whether this one does is left to the caller, as proven_below
        wants it when `value` lies past its end."""
        part = self._parts.get(tp)
        if part is None:
            return None
        i = bisect_right(part.segments, value, key=key)
        return part.segments[i - 1] if i else None

    def segments(self, tp: TopicPartition) -> list[Segment]:
        part = self._parts.get(tp)
        return list(part.segments) if part else []

    def stored_offsets(self, tp: TopicPartition) -> int:
        """What the partition holds, as MAX_OFFSETS_PER_PARTITION counts it."""
        part = self._parts.get(tp)
        return part.cost if part else 0

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
                "segments": [s.to_json() for s in part.segments],
            }
            for tp, part in sorted(self._parts.items())
        ]

    @classmethod
    def from_json(cls, data: object, max_offsets: int = MAX_OFFSETS_PER_PARTITION) -> ExactIndex:
        """Rebuild from `to_json()`, or from the older form where a segment is a list
        [u1, d1, u2, d2, hop]; raises ValueError on anything else."""
        index = cls(max_offsets)
        if not isinstance(data, list):
            raise ValueError("exact index: expected a list of partitions")
        for entry in data:
            if not isinstance(entry, dict):
                raise ValueError("exact index: expected an object per partition")
            part = _Partition()
            last = entry.get("last")
            part.last = (int(last[0]), int(last[1])) if last else None
            for seg in entry.get("segments", []):
                if isinstance(seg, dict):
                    part.segments.append(Segment.from_json(seg))
                    part.cost += part.segments[-1].cost
                else:  # the older form: the stretches replayed, so touching ones merge
                    u1, d1, u2, d2, _hop = seg
                    index._extend(part, (int(u1), int(d1)), (int(u2), int(d2)))
            index._trim(part)
            index._parts[TopicPartition(str(entry["topic"]), int(entry["partition"]))] = part
        return index


def _proven(last: tuple[int, int], up: int, down: int, kind: int) -> bool:
    u1, d1 = last
    if up <= u1 or down <= d1:
        return False
    return kind == HOP or up - u1 == down - d1
