"""sync.group.offsets never writes into a live group and never moves one backwards, whatever
its protocol and however its state changes between two looks (mm2.connectors.group_sync)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import pytest

from mm2.connectors.group_sync import GroupSync
from mm2.kafka.groups import GroupState
from mm2.records import Checkpoint, OffsetAndMetadata, TopicPartition
from tests.support.groups import FakeGroups

TP = TopicPartition("primary.orders", 0)


class Groups(FakeGroups):
    """The target's groups: `states` is what each describe() answers, in turn (the last one
    stays); a write while `members` is set is refused, as the broker refuses it."""

    def __init__(self, states: list[GroupState], committed: int | None = None) -> None:
        super().__init__({} if committed is None else {TP: OffsetAndMetadata(committed, "")})
        self.states = states
        self.written_to: list[str] = []

    def describe(self, groups: Iterable[str]) -> dict[str, GroupState]:
        state = self.states.pop(0) if len(self.states) > 1 else self.states[0]
        return {g: state for g in groups}

    def alter_offsets(
        self, group: str, offsets: Mapping[TopicPartition, OffsetAndMetadata]
    ) -> bool:
        self.written_to.append(group)
        return super().alter_offsets(group, offsets)

    @property
    def writes(self) -> list[int]:
        """The offset of TP in each commit that went in."""
        return [call[TP] for call in self.calls]


def empty(protocol: str = "classic") -> GroupState:
    return GroupState("app", "Empty", 0, protocol)


def stable(protocol: str = "classic") -> GroupState:
    return GroupState("app", "Stable", 1, protocol)


def checkpoints(offset: int) -> dict[str, dict[TopicPartition, Checkpoint]]:
    return {"app": {TP: Checkpoint("app", TP.topic, TP.partition, offset + 7, offset)}}


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_an_empty_group_gets_the_translated_offset_and_a_live_one_nothing(protocol: str) -> None:
    groups = Groups([empty(protocol)])
    sync = GroupSync(groups, flow="primary->backup", target="backup")
    sync.sync(checkpoints(100))
    assert groups.writes == [100]
    groups.states = [stable(protocol)]
    sync.sync(checkpoints(150))
    assert groups.writes == [100]


def test_a_member_that_joins_between_the_two_looks_is_not_written_into() -> None:
    groups = Groups([empty(), stable()])  # empty at the first look, a member at the recheck
    sync = GroupSync(groups, flow="primary->backup", target="backup")
    sync.sync(checkpoints(100))
    assert groups.writes == [] and sync.skipped == 1


def test_a_member_that_joins_after_the_recheck_makes_the_write_refused_and_skipped() -> None:
    groups = Groups([empty()])
    groups.members = True
    sync = GroupSync(groups, flow="primary->backup", target="backup")
    sync.sync(checkpoints(100))  # no exception: the task goes on
    assert groups.writes == [] and sync.skipped == 1


@pytest.mark.parametrize("state", ["Empty", "Dead"])
def test_a_group_ahead_of_the_translation_is_never_moved_back(state: str) -> None:
    """A member consumed on the target and left (or the group is called Dead, as the old API
    calls a KIP-848 group): its commit stands."""
    groups = Groups([GroupState("app", state, 0)], committed=180)
    sync = GroupSync(groups, flow="primary->backup", target="backup")
    sync.sync(checkpoints(150))
    assert groups.writes == []
    sync.sync(checkpoints(200))
    assert groups.writes == [200]


def test_a_state_mm2_does_not_know_is_left_alone() -> None:
    groups = Groups([GroupState("app", "Unknown", 0, "consumer")])
    GroupSync(groups, flow="primary->backup", target="backup").sync(checkpoints(100))
    assert groups.writes == []
