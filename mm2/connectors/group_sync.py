"""sync.group.offsets: translated offsets committed to the target's groups, never into a live one.

A group's state comes from the API of its protocol (classic groups, and KIP-848's consumer
groups, which the old DescribeGroups API calls Dead) and is asked again, with its committed
offsets, right before its write. A partition is written only where the target has no offset or
a lower one, whatever the state was called: a target group never moves backwards. A member that
joins after the last look makes the broker refuse the write (UNKNOWN_MEMBER_ID): skipped, never
retried into a live group.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Protocol

from mm2.connectors.progress_group import GroupOffsets
from mm2.kafka.groups import GroupState
from mm2.offset_syncs.checkpoint_rules import group_offsets_to_sync, sync_group_offsets
from mm2.records import Checkpoint, TopicPartition

__all__ = ["GroupSync", "TargetGroups"]

log = logging.getLogger(__name__)


class TargetGroups(GroupOffsets, Protocol):
    """The target cluster's groups (mm2.kafka.groups.GroupAdmin): their offsets, and states."""

    def describe(self, groups: Iterable[str]) -> dict[str, GroupState]: ...


class GroupSync:
    """One flow's group offset sync into its target cluster; `rename` gives a source group's
    name on the target (group.mirroring.policy.class; the same name by default)."""

    def __init__(
        self,
        groups: TargetGroups,
        *,
        flow: str,
        target: str,
        rename: Callable[[str], str] = lambda group: group,
    ) -> None:
        self._groups = groups
        self._flow, self._target = flow, target
        self._rename = rename
        self._reported: set[str] = set()  # groups said to be active, until they are not
        self.skipped = 0  # writes left out because a member joined right before them

    def sync(self, checkpoints: Mapping[str, Mapping[TopicPartition, Checkpoint]]) -> None:
        """Commit the latest checkpoint of each group that has no members on the target."""
        # the target's name of each source group that has checkpoints
        names = {self._rename(g): g for g in sorted(checkpoints)}
        if not names:
            return
        states = self._groups.describe(names)
        active = {g for g, s in states.items() if s.active}
        for group in sorted(active - self._reported):
            state = states[group]
            log.info(
                "%s: not syncing offsets of group %r: it is %s on %s with %d member(s) "
                "(%s protocol)",
                self._flow,
                group,
                state.state,
                self._target,
                state.members,
                state.protocol,
            )
        self._reported = active
        idle = [g for g in names if g not in active]
        planned = sync_group_offsets(
            {g: checkpoints[names[g]] for g in idle}, self._groups.committed_offsets(idle)
        )
        for group in sorted(planned):
            self._write(group, checkpoints[names[group]])

    def _write(self, group: str, checkpoints: Mapping[TopicPartition, Checkpoint]) -> None:
        state = self._groups.describe([group])[group]  # again, right before the write
        if state.active:
            self.skipped += 1
            log.info(
                "%s: offsets of group %r not synced: it became %s with %d member(s) on %s",
                self._flow,
                group,
                state.state,
                state.members,
                self._target,
            )
            return
        current = self._groups.committed_offsets([group]).get(group, {})
        desired = {tp: cp.offset_and_metadata() for tp, cp in checkpoints.items()}
        offsets = group_offsets_to_sync(desired, current)
        if not offsets:
            return
        if not self._groups.alter_offsets(group, offsets):
            self.skipped += 1
            log.info(
                "%s: offsets of group %r not synced: a member joined it on %s just now",
                self._flow,
                group,
                self._target,
            )
            return
        log.debug("%s: synced %d offset(s) of group %r", self._flow, len(offsets), group)
