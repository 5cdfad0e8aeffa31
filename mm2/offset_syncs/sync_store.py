"""Offset translation from the offset-syncs topic, as Apache's OffsetSyncStore does it.

Each partition keeps 64 syncs, latest first, spaced exponentially further apart towards the
end so that recent offsets translate precisely and old ones still translate (KAFKA-14666,
KAFKA-15202, KAFKA-15905). Invariants kept in `syncs[0..63]`:

* A: syncs[0] is the latest sync;
* B: for i < j and syncs[i] != syncs[j]: syncs[i].up <= syncs[j].up + 2^j - 2^i;
* C: for i < j and syncs[i] != syncs[j]: syncs[i].up >= syncs[j].up + 2^max(i-2, 0);
* D: syncs[63] is the earliest usable sync.

Sync identity (not value equality) decides "the same sync", as Java's `==` does, and bounds are
computed in Java's wrapping 64-bit arithmetic so that huge offsets behave exactly as in Apache.
The caller feeds records with `handle_record` and calls `mark_read_to_end` after the initial
read of the topic; this module never touches Kafka.
"""

from __future__ import annotations

from typing import Final

from mm2.records import OffsetSync, TopicPartition

__all__ = ["SYNCS_PER_PARTITION", "OffsetSyncStore", "lookup_sync"]

SYNCS_PER_PARTITION: Final = 64

_MOD: Final = 1 << 64
_HALF: Final = 1 << 63


def _long(value: int) -> int:
    """Java `long` wrap-around."""
    return (value + _HALF) % _MOD - _HALF


def _invariant_b(i_sync: OffsetSync, j_sync: OffsetSync, i: int, j: int) -> bool:
    bound = _long(j_sync.upstream_offset + _long(1 << j) - (1 << i))
    return i_sync is j_sync or bound < 0 or i_sync.upstream_offset <= bound


def _invariant_c(i_sync: OffsetSync, j_sync: OffsetSync, i: int) -> bool:
    bound = _long(j_sync.upstream_offset + (1 << max(i - 2, 0)))
    return i_sync is j_sync or (bound >= 0 and i_sync.upstream_offset >= bound)


class OffsetSyncStore:
    """Latest syncs per upstream partition and `translate_downstream`.

    With `initialization_must_read_to_end` (Apache: when no checkpoints could be loaded), only
    the last sync read before the end of the initial read survives, so that translation never
    goes back before what earlier checkpoints may already have used.
    """

    def __init__(self, *, initialization_must_read_to_end: bool = True) -> None:
        self._must_read_to_end = initialization_must_read_to_end
        self._read_to_end = False
        # Copy-on-write tuples: readers on other threads always see a consistent array.
        self._syncs: dict[TopicPartition, tuple[OffsetSync, ...]] = {}

    @property
    def read_to_end(self) -> bool:
        """True once the initial read of the offset-syncs topic has reached its end."""
        return self._read_to_end

    def mark_read_to_end(self) -> None:
        self._read_to_end = True

    def load(self, topic_partition: TopicPartition, syncs: tuple[OffsetSync, ...]) -> None:
        """Restore a partition's array as `syncs()` returned it (a persisted snapshot)."""
        if len(syncs) != SYNCS_PER_PARTITION:
            raise ValueError(f"expected {SYNCS_PER_PARTITION} syncs, got {len(syncs)}")
        self._syncs[topic_partition] = tuple(syncs)

    def partitions(self) -> list[TopicPartition]:
        return sorted(self._syncs)

    def syncs(self, topic_partition: TopicPartition) -> tuple[OffsetSync, ...] | None:
        """The 64 stored syncs, latest first, or None if the partition has none."""
        return self._syncs.get(topic_partition)

    def handle_record(self, sync: OffsetSync) -> None:
        """Apply one record of the offset-syncs topic."""
        tp = sync.topic_partition
        current = self._syncs.get(tp)
        if current is None:
            current = (sync,) * SYNCS_PER_PARTITION
        updated = list(current)
        self._update_sync_array(updated, sync)
        self._syncs[tp] = tuple(updated)

    def _update_sync_array(self, syncs: list[OffsetSync], sync: OffsetSync) -> None:
        upstream = sync.upstream_offset
        only_load_last = not self._read_to_end and self._must_read_to_end
        upstream_rewind = upstream < syncs[0].upstream_offset
        if only_load_last or upstream_rewind:
            syncs[:] = [sync] * SYNCS_PER_PARTITION
            return
        original = tuple(syncs)
        replacement = sync
        # Walks `original` from newest to oldest: the displaced syncs that may fill later slots.
        index = 0
        syncs[0] = replacement
        for current in range(1, SYNCS_PER_PARTITION):
            previous = current - 1
            while True:
                old_value = original[index]
                # Keeping an older sync rather than the new one keeps more distinct syncs.
                is_recent = _invariant_b(syncs[previous], old_value, previous, current)
                separated_from_previous = _invariant_c(syncs[previous], old_value, previous)
                following = current + 1
                separated_from_next = following >= SYNCS_PER_PARTITION or _invariant_c(
                    old_value, syncs[following], current
                )
                duplicate = index + 1 < SYNCS_PER_PARTITION and old_value is original[index + 1]
                promote = is_recent and separated_from_previous and separated_from_next
                if promote:
                    replacement = old_value
                # A sync too close to the previous slot can never be used further on.
                skip = duplicate or not separated_from_previous
                if promote or skip:
                    index += 1
                if not (index < current and skip):
                    break
            if _invariant_b(syncs[previous], syncs[current], previous, current):
                # B holds here, so it holds for every later slot too.
                break
            syncs[current] = replacement

    def translate_downstream(
        self, topic_partition: TopicPartition, upstream_offset: int
    ) -> int | None:
        """The downstream offset for a group at `upstream_offset`.

        None: the initial read has not finished, or there is no sync for the partition.
        -1: every stored sync is ahead of the offset (too old to translate).
        Otherwise sync.down, or sync.down + 1 when the group is past the sync: never more,
        since records between syncs may or may not have been replicated.
        """
        if not self._read_to_end:
            return None
        syncs = self._syncs.get(topic_partition)
        if syncs is None:
            return None
        sync = lookup_sync(syncs, upstream_offset)
        if sync.upstream_offset > upstream_offset:
            return -1
        step = 0 if upstream_offset == sync.upstream_offset else 1
        return sync.downstream_offset + step


def lookup_sync(syncs: tuple[OffsetSync, ...], offset: int) -> OffsetSync:
    """The latest stored sync at or before `offset`, else the oldest one (Apache's lookup)."""
    oldest = syncs[-1]
    if oldest.upstream_offset > offset:
        return oldest
    for sync in syncs:
        if sync.upstream_offset <= offset:
            return sync
    return oldest
