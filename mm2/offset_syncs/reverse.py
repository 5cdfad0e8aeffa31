"""Reverse translation: a downstream position back to where to resume upstream (failback).

A group that failed over consumes the remote topic on the target (`primary.orders`); going home
it must resume on the source topic (`orders`) without skipping anything. The same offset syncs
answer it, read the other way. For a group committed at downstream offset D (the next record it
would read there):

* inside a proven run (ExactIndex) holding upstream [u1, u2] at downstream [d1, d2], it resumes
  at u1 + (D - d1); inside a proven hop (d2 > d1) at u1 when D == d1, else u2. Exact;
* otherwise from the sync (u, d) with the greatest d <= D: at u when d == D (the record at D is
  the copy of u), else at u + 1. Every upstream record up to u was copied at or before d, so
  nothing is skipped; the records copied at d+1 .. D-1 were read already and may be read again
  (at most D - d - 1 of them);
* a D before every known sync cannot be translated (None).

Syncs are fed in log order, as the offset-syncs topic holds them; a downstream offset going
backwards (a truncated or recreated target) forgets what came before.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from mm2.offset_syncs.exact_index import ExactIndex, PrevSync
from mm2.records import OffsetSync, TopicPartition

__all__ = ["ReverseTranslation", "ReverseTranslator"]


@dataclass(frozen=True)
class ReverseTranslation:
    """Where a group committed at `downstream` resumes upstream; `exact`: it re-reads nothing."""

    downstream: int
    upstream: int
    exact: bool
    rereads_at_most: int


class _Syncs:
    __slots__ = ("downs", "ups")

    def __init__(self) -> None:
        self.downs: list[int] = []
        self.ups: list[int] = []


class ReverseTranslator:
    """Offset syncs of one flow, kept to translate downstream offsets back upstream."""

    def __init__(self) -> None:
        self.exact = ExactIndex()
        self._syncs: dict[TopicPartition, _Syncs] = {}

    def handle(self, sync: OffsetSync, prev: PrevSync | None) -> None:
        """Apply one sync (and its decoded `mm2.prev-sync` header), in log order."""
        self.exact.add(sync, prev)
        part = self._syncs.setdefault(sync.topic_partition, _Syncs())
        down = sync.downstream_offset
        if part.downs and down < part.downs[-1]:
            part.downs.clear()
            part.ups.clear()
        part.downs.append(down)
        part.ups.append(sync.upstream_offset)

    def partitions(self) -> list[TopicPartition]:
        return sorted(self._syncs)

    def translate(self, upstream_tp: TopicPartition, downstream: int) -> ReverseTranslation | None:
        """`upstream_tp` names the upstream partition (the syncs' key), `downstream` the commit."""
        part = self._syncs.get(upstream_tp)
        if part is None:
            return None
        up = self.exact.translate_back(upstream_tp, downstream)
        if up is not None:
            return ReverseTranslation(downstream, up, True, 0)
        i = bisect.bisect_right(part.downs, downstream) - 1
        if i < 0:
            return None
        d, u = part.downs[i], part.ups[i]
        if d == downstream:
            return ReverseTranslation(downstream, u, True, 0)
        rereads = downstream - d - 1
        return ReverseTranslation(downstream, u + 1, rereads == 0, rereads)
