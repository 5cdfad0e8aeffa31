"""A simulated mirror for translation tests: source offsets with gaps, the target log, and the
offset syncs (with their headers) as the real SyncTrail writes them."""

from __future__ import annotations

from hypothesis import strategies as st

from mm2.offset_syncs.exact_index import PrevSync, decode_prev_sync, encode_prev_sync
from mm2.offset_syncs.sync_trail import SyncTrail, offset_runs
from mm2.records import OffsetSync, TopicPartition

TP = TopicPartition("orders", 0)


class Mirror:
    """Source offsets (with gaps), the target log, and the syncs as the topic would hold them."""

    def __init__(self, source: list[int], lag: int) -> None:
        self.source = source
        self.target: list[int] = []  # upstream offset held at each downstream offset
        self.lag = lag
        self.trail = SyncTrail(lag)
        self.topic: list[tuple[OffsetSync, PrevSync | None]] = []

    def copy(self, start: int, until: int, *, lose_syncs: bool = False) -> None:
        ups, downs = [], []
        for up in self.source[start:until]:
            ups.append(up)
            downs.append(len(self.target))
            self.target.append(up)
        for up, down, prev in self.trail.points(offset_runs(ups, downs)):
            if not lose_syncs:
                self.topic.append((OffsetSync(TP.topic, TP.partition, up, down), prev))

    def crash(self) -> None:
        self.trail = SyncTrail(self.lag)

    def copy_in_batches(self, batches: list[int]) -> None:
        """Copy the whole source, `batches` records at a time, then the rest."""
        at = 0
        for size in [*batches, len(self.source)]:
            until = min(at + size, len(self.source))
            self.copy(at, until)
            at = until

    def copy_with_events(self, steps: list[tuple[int, str]]) -> None:
        """Copy batches with events, then the rest: "crash" (the writer restarts and the
        uncommitted batch runs again), "lost" (its syncs never land), "rerun" (a failed batch
        retried within the same writer), "ok"."""
        at = 0
        for size, event in steps:
            until = min(at + size, len(self.source))
            if event == "crash":
                self.copy(at, until)
                self.crash()
                at = max(0, at - size // 2)
                continue
            self.copy(at, until, lose_syncs=event == "lost")
            if event == "rerun":
                self.copy(at, until)
            at = until
        self.copy(at, len(self.source))

    def read_back(self) -> list[tuple[OffsetSync, PrevSync | None]]:
        """The syncs as a reader sees them: headers through their bytes."""
        return [
            (sync, decode_prev_sync(None if prev is None else encode_prev_sync(prev)))
            for sync, prev in self.topic
        ]


EVENTS = st.lists(
    st.tuples(st.integers(1, 12), st.sampled_from(["ok", "crash", "lost", "rerun"])),
    max_size=20,
)


@st.composite
def source_offsets(draw: st.DrawFn) -> list[int]:
    """Increasing source offsets with gaps of up to 3 (markers, aborts, compaction)."""
    gaps = draw(st.lists(st.integers(1, 4), min_size=5, max_size=60))
    offsets, at = [], draw(st.integers(0, 5))
    for g in gaps:
        at += g
        offsets.append(at)
    return offsets
