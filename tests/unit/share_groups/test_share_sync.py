"""ShareGroupSync and the position it mirrors, against in-memory share groups."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import pytest

from mm2.records import TopicPartition
from mm2.share_groups import ShareGroupSync, ShareOffset
from mm2.share_groups.admin import ShareGroupState
from mm2.share_groups.sync import share_position

TP = tuple[str, int]


class Groups:
    """One cluster's share groups in memory; `members` per group, every write recorded."""

    def __init__(self) -> None:
        self.offsets_of: dict[str, dict[TP, ShareOffset]] = {}
        self.members: dict[str, int] = {}
        self.writes: list[tuple[str, dict[TP, int]]] = []
        self.join_before_write = False

    def list_groups(self) -> list[str]:
        return sorted(self.offsets_of)

    def describe(self, group: str) -> ShareGroupState:
        if group not in self.offsets_of:
            return ShareGroupState("Dead", 0)
        members = self.members.get(group, 0)
        return ShareGroupState("Stable" if members else "Empty", members)

    def offsets(self, group: str) -> dict[TP, ShareOffset]:
        return dict(self.offsets_of.get(group, {}))

    def alter_offsets(self, group: str, offsets: Mapping[TP, int]) -> bool:
        if self.join_before_write or self.members.get(group, 0):
            return False
        self.writes.append((group, dict(offsets)))
        held = self.offsets_of.setdefault(group, {})
        for tp, offset in offsets.items():
            held[tp] = ShareOffset(offset, 0)
        return True


def make_sync(source: Groups, target: Groups, ends: dict[TP, int] | None = None) -> ShareGroupSync:
    asked: list[list[TP]] = []

    def stable_ends(tps: Iterable[TP]) -> dict[TP, int]:
        asked.append(sorted(tps))
        return {tp: (ends or {})[tp] for tp in tps if tp in (ends or {})}

    return ShareGroupSync(
        source,
        target,
        flow="a->b",
        translate=lambda tp, offset: offset + 1000,  # the target's offsets are 1000 further
        rename=lambda tp: TopicPartition(f"a.{tp.topic}", tp.partition),
        target_group=lambda group: f"{group}-dr",
        mirrors=lambda group: not group.startswith("skip"),
        replicates=lambda topic: topic != "private",
        stable_ends=stable_ends,
    )


def test_position_is_the_start_offset_unless_everything_is_acknowledged() -> None:
    assert share_position(ShareOffset(-1, -1), 50) is None  # nothing stored yet
    assert share_position(ShareOffset(20, 30), 50) == 20  # acknowledged above 20: not counted
    assert share_position(ShareOffset(20, 0), 50) == 50  # lag 0: the stable end, read before
    assert share_position(ShareOffset(20, 0), None) == 20  # no end read: the start offset
    assert share_position(ShareOffset(20, 0), 10) == 20  # an end below the start: the start
    assert share_position(ShareOffset(20, -1), 50) == 20  # lag unknown


def test_a_group_is_translated_renamed_and_set_on_the_target() -> None:
    source, target = Groups(), Groups()
    source.offsets_of = {
        "orders": {
            ("t", 0): ShareOffset(5, 10),
            ("t", 1): ShareOffset(7, 0),
            ("private", 0): ShareOffset(3, 1),
            ("t", 2): ShareOffset(-1, -1),
        },
        "skip-me": {("t", 0): ShareOffset(9, 1)},
    }
    sync = make_sync(source, target, ends={("t", 1): 40})
    sync.refresh()
    sync.sync()
    assert target.writes == [("orders-dr", {("a.t", 0): 1005, ("a.t", 1): 1040})]


def test_nothing_is_written_again_while_the_source_has_not_moved() -> None:
    source, target = Groups(), Groups()
    source.offsets_of = {"g": {("t", 0): ShareOffset(5, 10)}}
    sync = make_sync(source, target)
    sync.refresh()
    sync.sync()
    sync.sync()
    assert len(target.writes) == 1
    source.offsets_of["g"][("t", 0)] = ShareOffset(8, 7)
    sync.sync()
    assert target.writes[-1] == ("g-dr", {("a.t", 0): 1008})


def test_a_target_group_with_members_is_left_alone() -> None:
    source, target = Groups(), Groups()
    source.offsets_of = {"g": {("t", 0): ShareOffset(5, 10)}}
    target.offsets_of = {"g-dr": {("a.t", 0): ShareOffset(1000, 3)}}
    target.members["g-dr"] = 2
    sync = make_sync(source, target)
    sync.refresh()
    sync.sync()
    assert target.writes == []
    target.members["g-dr"] = 0  # the members left: the next pass writes
    sync.sync()
    assert target.writes == [("g-dr", {("a.t", 0): 1005})]


def test_a_member_joining_right_before_the_write_is_a_skip_not_a_failure() -> None:
    source, target = Groups(), Groups()
    source.offsets_of = {"g": {("t", 0): ShareOffset(5, 10)}}
    target.join_before_write = True
    sync = make_sync(source, target)
    sync.refresh()
    sync.sync()
    assert (target.writes, sync.skipped) == ([], 1)
    target.join_before_write = False
    sync.sync()  # not remembered as written: tried again
    assert target.writes == [("g-dr", {("a.t", 0): 1005})]


@pytest.mark.parametrize("held", [1005, 1200])
def test_a_target_group_never_moves_backwards(held: int) -> None:
    source, target = Groups(), Groups()
    source.offsets_of = {"g": {("t", 0): ShareOffset(5, 10), ("t", 1): ShareOffset(6, 1)}}
    target.offsets_of = {"g-dr": {("a.t", 0): ShareOffset(held, 0)}}
    sync = make_sync(source, target)
    sync.refresh()
    sync.sync()
    assert target.writes == [("g-dr", {("a.t", 1): 1006})]


def test_an_untranslatable_position_is_left_out() -> None:
    source, target = Groups(), Groups()
    source.offsets_of = {"g": {("t", 0): ShareOffset(5, 10)}}
    sync = ShareGroupSync(
        source,
        target,
        flow="a->b",
        translate=lambda tp, offset: None,
        rename=lambda tp: tp,
        target_group=lambda g: g,
        mirrors=lambda g: True,
        replicates=lambda t: True,
        stable_ends=lambda tps: {},
    )
    sync.refresh()
    sync.sync()
    assert target.writes == []


def test_records_produced_between_the_describe_and_the_ends_are_not_taken_as_acknowledged() -> None:
    source, target = Groups(), Groups()
    tp = ("orders", 0)
    source.offsets_of["g"] = {tp: ShareOffset(40, 0)}  # everything acknowledged, as described
    ends = {tp: 50}

    def produced_meanwhile(tps: Iterable[TP]) -> dict[TP, int]:
        # 10 records arrive right after the first describe: the group has not read them
        source.offsets_of["g"] = {tp: ShareOffset(40, 10)}
        return {t: ends[t] for t in tps}

    sync = ShareGroupSync(
        source,
        target,
        flow="a->b",
        translate=lambda tp, offset: offset,
        rename=lambda tp: TopicPartition(tp.topic, tp.partition),
        target_group=lambda g: g,
        mirrors=lambda g: True,
        replicates=lambda t: True,
        stable_ends=produced_meanwhile,
    )
    sync.refresh()
    sync.sync()
    # not 50: records 40-49 were never received; the group starts at its start offset
    assert target.writes == [("g", {("orders", 0): 40})]
