"""When a replicated (upstream, downstream) offset pair becomes an offset sync (OffsetSyncWriter).

The caller owns the producer: it feeds pairs in with `maybe_queue_offset_syncs`, takes syncs to
send with `next_pending` (which takes one of the in-flight slots) and calls `release` from the
delivery callback.
"""

from __future__ import annotations

import threading
from typing import Final

from mm2.records import OffsetSync, TopicPartition

__all__ = ["MAX_OUTSTANDING_OFFSET_SYNCS", "OffsetSyncWriter", "PartitionState"]

MAX_OUTSTANDING_OFFSET_SYNCS: Final = 10


class PartitionState:
    """Per-partition emission state; `update` says whether the pair must be synced now."""

    __slots__ = (
        "last_sync_downstream_offset",
        "max_offset_lag",
        "previous_downstream_offset",
        "previous_upstream_offset",
        "should_sync_offsets",
    )

    def __init__(self, max_offset_lag: int) -> None:
        self.max_offset_lag = max_offset_lag
        self.previous_upstream_offset = -1
        self.previous_downstream_offset = -1
        self.last_sync_downstream_offset = -1
        self.should_sync_offsets = False

    def update(self, upstream_offset: int, downstream_offset: int) -> bool:
        """True if a sync is due; stays true until `reset()`, as in Java."""
        no_sync_this_lifetime = self.last_sync_downstream_offset == -1
        # Translation reaches one past the last sync, hence the +1.
        translated_too_stale = (
            downstream_offset - (self.last_sync_downstream_offset + 1) >= self.max_offset_lag
        )
        skipped_upstream_record = upstream_offset - self.previous_upstream_offset != 1
        truncated_downstream = downstream_offset < self.previous_downstream_offset
        if (
            no_sync_this_lifetime
            or translated_too_stale
            or skipped_upstream_record
            or truncated_downstream
        ):
            self.last_sync_downstream_offset = downstream_offset
            self.should_sync_offsets = True
        self.previous_upstream_offset = upstream_offset
        self.previous_downstream_offset = downstream_offset
        return self.should_sync_offsets

    def reset(self) -> None:
        self.should_sync_offsets = False

    def update_run(
        self, upstream_offset: int, downstream_offset: int, length: int
    ) -> list[tuple[int, int]]:
        """`update` for a run of `length` records whose offsets both advance by one.

        Returns the (upstream, downstream) pairs at which a sync fires, exactly those for which
        per-record `update` calls (each followed by `reset`) would return true, in
        O(syncs) instead of O(records): inside a run only the lag rule can fire.
        """
        if length <= 0:
            return []
        fired: list[tuple[int, int]] = []
        if self.update(upstream_offset, downstream_offset):
            fired.append((upstream_offset, downstream_offset))
            self.reset()
        last_down = downstream_offset + length - 1
        due = self.last_sync_downstream_offset + 1 + self.max_offset_lag
        due = max(due, downstream_offset + 1)
        while due <= last_down:
            fired.append((upstream_offset + due - downstream_offset, due))
            self.last_sync_downstream_offset = due
            due = due + 1 + self.max_offset_lag
        self.previous_upstream_offset = upstream_offset + length - 1
        self.previous_downstream_offset = last_down
        return fired


class OffsetSyncWriter:
    """Pending (send now) and delayed (send at the next commit) syncs, latest per partition.

    Thread-safe: records are committed, offsets flushed and deliveries confirmed on
    different threads.
    """

    def __init__(
        self, max_offset_lag: int, max_outstanding: int = MAX_OUTSTANDING_OFFSET_SYNCS
    ) -> None:
        self._max_offset_lag = max_offset_lag
        self._max_outstanding = max_outstanding
        self._outstanding = 0
        self._lock = threading.Lock()
        self._states: dict[TopicPartition, PartitionState] = {}
        # dicts keep first-insertion order like Java's LinkedHashMap
        self._pending: dict[TopicPartition, OffsetSync] = {}
        self._delayed: dict[TopicPartition, OffsetSync] = {}

    def maybe_queue_offset_syncs(
        self, topic_partition: TopicPartition, upstream_offset: int, downstream_offset: int
    ) -> None:
        """Record that upstream_offset was written at downstream_offset on the target."""
        sync = OffsetSync(
            topic_partition.topic, topic_partition.partition, upstream_offset, downstream_offset
        )
        with self._lock:
            state = self._states.get(topic_partition)
            if state is None:
                state = self._states[topic_partition] = PartitionState(self._max_offset_lag)
            if state.update(upstream_offset, downstream_offset):
                self._delayed.pop(topic_partition, None)
                self._pending[topic_partition] = sync
                state.reset()
            else:
                self._delayed[topic_partition] = sync

    def promote_delayed_offset_syncs(self) -> None:
        """On commit: every delayed sync becomes pending (KAFKA-15906)."""
        with self._lock:
            self._pending.update(self._delayed)
            self._delayed.clear()

    def next_pending(self) -> OffsetSync | None:
        """The next sync to send, taking an in-flight slot; None if none pending or no slot free.

        The caller must `release()` the slot when the send completes, successfully or not.
        """
        with self._lock:
            if not self._pending or self._outstanding >= self._max_outstanding:
                return None
            topic_partition = next(iter(self._pending))
            self._outstanding += 1
            return self._pending.pop(topic_partition)

    def release(self) -> None:
        """Give back an in-flight slot (from the producer's delivery callback)."""
        with self._lock:
            if self._outstanding <= 0:
                raise RuntimeError("release() without a matching next_pending()")
            self._outstanding -= 1

    @property
    def outstanding(self) -> int:
        with self._lock:
            return self._outstanding

    def pending_offset_syncs(self) -> dict[TopicPartition, OffsetSync]:
        """A copy of the pending map (tests, metrics)."""
        with self._lock:
            return dict(self._pending)

    def delayed_offset_syncs(self) -> dict[TopicPartition, OffsetSync]:
        """A copy of the delayed map (tests, metrics)."""
        with self._lock:
            return dict(self._delayed)

    def partition_state(self, topic_partition: TopicPartition) -> PartitionState | None:
        return self._states.get(topic_partition)
