"""sync.share.group.offsets: a source share group's position, translated, set on the target.

A share group has no committed offset; what the broker stores per partition is the share
partition's start offset (SPSO): every record below it is acknowledged or archived. That is
the position mirrored here, with one correction: the broker persists the SPSO one write late
(it writes the value it had before an acknowledgement, and nothing writes again until the next
one), so a group that has acknowledged everything still shows an old SPSO. When its lag is 0
the position is instead the source partition's last stable offset, read before the offsets
that show the lag of 0 (every record below it was acknowledged). Records acknowledged above
the SPSO are not carried: they need not be contiguous, and counting them would skip records.

The position is translated like a committed offset (the flow's offset syncs) and written with
AlterShareGroupOffsets only into a target group without members (the broker refuses the write
otherwise: NON_EMPTY_GROUP, skipped until the next pass), and never below what the target
group holds: a target group never moves backwards.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Protocol

from mm2.records import TP, TopicPartition
from mm2.share_groups.admin import ShareGroupState, ShareOffset

__all__ = ["ShareGroupSync", "ShareGroups", "share_position"]

log = logging.getLogger(__name__)


class ShareGroups(Protocol):
    """One cluster's share groups (ShareGroupAdmin)."""

    def list_groups(self) -> list[str]: ...
    def describe(self, group: str) -> ShareGroupState: ...
    def offsets(self, group: str) -> dict[TP, ShareOffset]: ...
    def alter_offsets(self, group: str, offsets: Mapping[TP, int]) -> bool: ...


def share_position(offset: ShareOffset, stable_end: int | None) -> int | None:
    """The first source offset the share group has not acknowledged for sure; None before the
    broker stored any start offset for the partition."""
    if offset.start < 0:
        return None
    if offset.lag == 0 and stable_end is not None and stable_end > offset.start:
        return stable_end
    return offset.start


class ShareGroupSync:
    """One flow's share-group sync. `translate` maps a source position to the target (None
    when the offset syncs cannot tell yet), `rename` a source partition to its remote one,
    `target_group` a source group to its name on the target; `mirrors` is the group filter and
    `replicates` the topic filter; `stable_ends` reads the source's last stable offsets."""

    def __init__(
        self,
        source: ShareGroups,
        target: ShareGroups,
        *,
        flow: str,
        translate: Callable[[TopicPartition, int], int | None],
        rename: Callable[[TopicPartition], TopicPartition],
        target_group: Callable[[str], str],
        mirrors: Callable[[str], bool],
        replicates: Callable[[str], bool],
        stable_ends: Callable[[Iterable[TP]], Mapping[TP, int]],
    ) -> None:
        self._source, self._target = source, target
        self._flow = flow
        self._translate, self._rename = translate, rename
        self._target_group, self._mirrors, self._replicates = target_group, mirrors, replicates
        self._stable_ends = stable_ends
        self._groups: list[str] = []
        self._written: dict[str, dict[TP, int]] = {}  # what each target group was last given
        self._busy: set[str] = set()  # target groups said to have members, until they have none
        self.skipped = 0  # writes the broker refused because a member had just joined

    def refresh(self) -> None:
        """List the source's share groups again (at refresh.groups)."""
        groups = [g for g in self._source.list_groups() if self._mirrors(g)]
        added = sorted(set(groups) - set(self._groups))
        if added:
            log.info("%s: share groups found: %s", self._flow, ", ".join(added))
        self._groups = groups

    def sync(self) -> None:
        for group in self._groups:
            desired = self._desired(group)
            if desired and desired != self._written.get(group):
                self._write(group, desired)

    def _desired(self, group: str) -> dict[TP, int]:
        """The target positions of the source group's partitions that the flow mirrors."""
        mine = self._mirrored(group)
        ends: Mapping[TP, int] = {}
        if any(o.lag == 0 for o in mine.values()):
            # The ends first, then the offsets again: only a lag of 0 read after the ends says
            # every record below them was acknowledged (one read before them says nothing of
            # the records produced in between).
            ends = self._stable_ends(mine)
            mine = self._mirrored(group)
        out: dict[TP, int] = {}
        for (topic, partition), offset in sorted(mine.items()):
            position = share_position(offset, ends.get((topic, partition)))
            if position is None:
                continue
            upstream = TopicPartition(topic, partition)
            downstream = self._translate(upstream, position)
            if downstream is not None and downstream >= 0:
                remote = self._rename(upstream)
                out[(remote.topic, remote.partition)] = downstream
        return out

    def _mirrored(self, group: str) -> dict[TP, ShareOffset]:
        offsets = self._source.offsets(group)
        return {tp: o for tp, o in offsets.items() if self._replicates(tp[0])}

    def _write(self, group: str, desired: dict[TP, int]) -> None:
        name = self._target_group(group)
        state = self._target.describe(name)
        if state.members:
            if name not in self._busy:
                log.info(
                    "%s: not syncing share group %r: it has %d member(s) on the target (%s)",
                    self._flow,
                    name,
                    state.members,
                    state.state,
                )
                self._busy.add(name)
            return
        self._busy.discard(name)
        held = self._target.offsets(name)
        forward = {tp: o for tp, o in desired.items() if tp not in held or held[tp].start < o}
        if forward and not self._target.alter_offsets(name, forward):
            self.skipped += 1
            log.info("%s: share group %r not synced: a member joined it just now", self._flow, name)
            return
        if forward:
            log.debug("%s: share group %r set to %s", self._flow, name, forward)
        self._written[group] = desired
