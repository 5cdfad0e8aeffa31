"""When a replicated (upstream, downstream) offset pair becomes an offset sync: Apache MM2's
rule per partition (PartitionState), which the copy path's offset-sync trail applies
(mm2.offset_syncs.sync_trail)."""

from __future__ import annotations

__all__ = ["PartitionState"]


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
