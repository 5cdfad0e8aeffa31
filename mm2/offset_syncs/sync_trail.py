"""SyncTrail: which offset syncs a partition's copy runs call for, each with its proof header."""

from __future__ import annotations

from collections.abc import Sequence

from mm2.offset_syncs.exact_index import HOP, RUN, PrevSync
from mm2.offset_syncs.sync_writer import PartitionState

__all__ = ["SyncPoint", "SyncTrail", "offset_runs"]

# (upstream, downstream, header): the header is None for the first sync of a writer's lifetime.
SyncPoint = tuple[int, int, PrevSync | None]


def offset_runs(upstream: Sequence[int], downstream: Sequence[int]) -> list[tuple[int, int, int]]:
    """Offset pairs compressed into runs (upstream, downstream, length): both advance by one."""
    n = len(upstream)
    if n != len(downstream):
        raise ValueError(f"{n} upstream offsets but {len(downstream)} downstream")
    if (
        n
        and list(upstream) == list(range(upstream[0], upstream[0] + n))
        and list(downstream) == list(range(downstream[0], downstream[0] + n))
    ):
        return [(upstream[0], downstream[0], n)]  # the common case, compared at C speed
    runs: list[tuple[int, int, int]] = []
    for up, down in zip(upstream, downstream, strict=True):
        if runs:
            u0, d0, length = runs[-1]
            if up == u0 + length and down == d0 + length:
                runs[-1] = (u0, d0, length + 1)
                continue
        runs.append((up, down, 1))
    return runs


class SyncTrail:
    """One partition's writer state: Apache's emission rule plus a sync at each run's ends.

    A run is (upstream, downstream, length): records whose offsets both advance by one. Syncs
    go at Apache's rule points (offset.lag.max, skipped upstream records, truncation), at the
    last record of every run, and at the first record of every run that does not continue the
    previous one. Each carries the previous sync and whether the two are joined by one run
    (RUN) or by a hop between runs (HOP), for mm2.offset_syncs.exact_index.
    """

    def __init__(self, max_offset_lag: int) -> None:
        self._state = PartitionState(max_offset_lag)
        self._prev: tuple[int, int] | None = None

    def points(self, runs: Sequence[tuple[int, int, int]]) -> list[SyncPoint]:
        out: list[SyncPoint] = []
        for u0, d0, n in runs:
            if n <= 0:
                continue
            fired = self._state.update_run(u0, d0, n)
            prev = self._prev
            continues = prev is not None and (u0, d0) == (prev[0] + 1, prev[1] + 1)
            wanted = set(fired) | {(u0 + n - 1, d0 + n - 1)}
            if not continues:
                wanted.add((u0, d0))
            for up, down in sorted(wanted):
                out.append((up, down, self._header(u0, d0, n, continues)))
                self._prev = (up, down)
        return out

    def _header(self, u0: int, d0: int, n: int, continues: bool) -> PrevSync | None:
        prev = self._prev
        if prev is None:
            return None
        on_run = u0 <= prev[0] < u0 + n and prev[1] - d0 == prev[0] - u0
        kind = RUN if on_run or continues else HOP
        return PrevSync(prev[0], prev[1], kind)
