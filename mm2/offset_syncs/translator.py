"""OffsetTranslator: exact translation where syncs prove it, Apache's everywhere else."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mm2.offset_syncs.exact_index import ExactIndex, PrevSync
from mm2.offset_syncs.sync_store import OffsetSyncStore, lookup_sync
from mm2.records import OffsetSync, TopicPartition

__all__ = ["FirstRecord", "OffsetTranslator", "Translation"]

# (upstream partition, offset) -> the offset of the first record the source holds at or after
# it, as the mirror reads the source; None when that cannot be said for sure.
FirstRecord = Callable[[TopicPartition, int], int | None]


@dataclass(frozen=True)
class Translation:
    """Where a group committed at `upstream` resumes downstream.

    `downstream` is -1 when every known sync is ahead of the offset (too old to translate).
    `exact`: the group re-reads nothing and skips nothing (barring duplicates the mirror itself
    wrote); otherwise it skips nothing and re-reads at most `rereads_at_most` records: the
    upstream offsets strictly between the nearest known copy below `upstream` and `upstream`.
    `via` is set when `upstream` is older than every sync kept and translated as the first
    record the source holds after it (compaction removed the offsets in between): that
    record's offset.
    """

    upstream: int
    downstream: int
    exact: bool
    rereads_at_most: int
    via: int | None = None


class OffsetTranslator:
    """Feeds every offset sync to Apache's store and to the exact index, translates with both."""

    def __init__(self, *, initialization_must_read_to_end: bool = True) -> None:
        self.store = OffsetSyncStore(
            initialization_must_read_to_end=initialization_must_read_to_end
        )
        self.exact = ExactIndex()

    @property
    def read_to_end(self) -> bool:
        return self.store.read_to_end

    def mark_read_to_end(self) -> None:
        self.store.mark_read_to_end()

    def handle(self, sync: OffsetSync, prev: PrevSync | None) -> None:
        self.store.handle_record(sync)
        self.exact.add(sync, prev)

    def translate(
        self, tp: TopicPartition, offset: int, first_record: FirstRecord | None = None
    ) -> Translation | None:
        """None before the initial read finished or when the partition has no sync.

        An offset older than every sync kept (downstream -1) is translated only through
        `first_record`: when the first record the source holds at or after `offset` is at a
        later offset f, no record lies between them to read, so a group committed at
        `offset` reads f next, and resumes as a group committed at f does. Where f is itself
        older than every sync kept, or unknown, the offset stays untranslated (-1): nothing
        says whether or where that record was copied.
        """
        found = self._translate(tp, offset)
        if found is None or found.downstream >= 0 or first_record is None:
            return found
        first = first_record(tp, offset)
        if first is None or first <= offset:
            return found
        later = self._translate(tp, first)
        if later is None or later.downstream < 0:
            return found
        return Translation(offset, later.downstream, later.exact, later.rereads_at_most, first)

    def _translate(self, tp: TopicPartition, offset: int) -> Translation | None:
        if not self.store.read_to_end:
            return None
        exact = self.exact.translate(tp, offset)
        if exact is not None:
            return Translation(offset, exact, True, 0)
        syncs = self.store.syncs(tp)
        if syncs is None:
            return None
        sync = lookup_sync(syncs, offset)
        up, down = sync.upstream_offset, sync.downstream_offset
        # The exact index may know a copy nearer below `offset` (the end of a proven stretch),
        # or the only one: Apache's 64 syncs thin out towards the past.
        below = self.exact.proven_below(tp, offset)
        if below is not None and (up > offset or below[0] > up):
            up, down = below
        if up > offset:
            return Translation(offset, -1, False, 0)
        if offset == up:
            return Translation(offset, down, True, 0)
        # Right after the latest sync the next downstream offset is the next record copied.
        latest = syncs[0]
        after_latest = (up, down) == (latest.upstream_offset, latest.downstream_offset)
        after_latest = after_latest and offset == up + 1
        # Records up to `up` were copied at or before `down`; the group read the ones
        # upstream of `offset`, so it re-reads at most those copied after `down`.
        return Translation(offset, down + 1, after_latest, offset - up - 1)

    # -- persistence: the checkpoint task resumes without rereading the offset-syncs topic --
    def to_json(self) -> dict[str, object]:
        store = []
        for tp in self.store.partitions():
            syncs = self.store.syncs(tp) or ()
            runs: list[list[int]] = []  # equal neighbours are one sync object: keep them so
            for i, sync in enumerate(syncs):
                if i and sync is syncs[i - 1]:
                    runs[-1][2] += 1
                else:
                    runs.append([sync.upstream_offset, sync.downstream_offset, 1])
            store.append({"topic": tp.topic, "partition": tp.partition, "syncs": runs})
        return {"store": store, "exact": self.exact.to_json()}

    @classmethod
    def from_json(
        cls, data: object, *, initialization_must_read_to_end: bool = True
    ) -> OffsetTranslator:
        """Rebuild from `to_json()`; raises ValueError (or KeyError/TypeError) if malformed."""
        if not isinstance(data, dict):
            raise ValueError("offset translator state: expected an object")
        t = cls(initialization_must_read_to_end=initialization_must_read_to_end)
        for entry in data["store"]:
            tp = TopicPartition(str(entry["topic"]), int(entry["partition"]))
            syncs: list[OffsetSync] = []
            for up, down, count in entry["syncs"]:
                sync = OffsetSync(tp.topic, tp.partition, int(up), int(down))
                syncs.extend([sync] * int(count))
            t.store.load(tp, tuple(syncs))
        t.exact = ExactIndex.from_json(data["exact"])
        return t

    def downstream(
        self, tp: TopicPartition, offset: int, first_record: FirstRecord | None = None
    ) -> int | None:
        """`translate_downstream`'s shape, for the checkpoint rules."""
        t = self.translate(tp, offset, first_record)
        return None if t is None else t.downstream
