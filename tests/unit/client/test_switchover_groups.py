"""The groups step of a switchover and the groups still consuming on the source: such a group
is named in the check, not moved (its commits still move, so its translation would not be its
last and "exact" would not be true), and the step is marked failed so the report is not done;
a run after its consumers stopped moves it. The switchover's Kafka reads are faked."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest

from mm2.client import switchover as switchover_module
from mm2.client.failover import Applied
from mm2.client.plan import FailoverPlan, PartitionMove
from mm2.client.switchover import switchover
from mm2.kafka.groups import GroupState
from mm2.records import TopicPartition
from tests.unit.client.test_switchover_registries import DrainedLag, Flows, flows


def plan(group: str) -> FailoverPlan:
    move = PartitionMove(
        TopicPartition("orders", 0),
        10,
        TopicPartition("primary.orders", 0),
        12,
        exact=True,
        rereads_at_most=0,
    )
    return FailoverPlan("failover", group, "primary", "backup", "offset syncs", (move,))


class Groups:
    """Both clusters' groups: members per group on the source, none on the target."""

    def __init__(self, members: dict[str, int]) -> None:
        self.members = members
        self.applied: list[str] = []

    def admin(self, *args: Any, **kwargs: Any) -> Groups:
        return self

    def describe(self, groups: Iterable[str]) -> dict[str, GroupState]:
        return {
            g: GroupState(g, "Stable" if self.members.get(g) else "Empty", self.members.get(g, 0))
            for g in groups
        }

    def apply(self, plan: FailoverPlan, admin: Any) -> Applied:
        self.applied.append(plan.group)
        return Applied({}, {})


@pytest.fixture
def groups(monkeypatch: pytest.MonkeyPatch) -> Groups:
    faked = Groups({"reading": 1})
    monkeypatch.setattr(switchover_module, "LagReader", DrainedLag)
    monkeypatch.setattr(
        switchover_module,
        "translate_all_groups",
        lambda *a, **k: [plan("reading"), plan("stopped")],
    )
    monkeypatch.setattr(switchover_module, "mirrored_groups", lambda *a: ["reading", "stopped"])
    monkeypatch.setattr(switchover_module, "GroupAdmin", faked.admin)
    monkeypatch.setattr(switchover_module, "target_group_admin", faked.admin)
    monkeypatch.setattr(switchover_module, "apply_failover", faked.apply)
    return faked


def test_a_group_still_consuming_on_the_source_is_not_moved_and_the_report_is_not_done(
    groups: Groups,
) -> None:
    flow, back = flows("")
    log: list[str] = []
    said: list[str] = []
    control = Flows(log, primary_backup="RUNNING", backup_primary="PAUSED")
    report = switchover(
        flow,
        control,
        reverse_flow=back,
        start_reverse=True,
        say=said.append,
        poll_seconds=0.0,
        drain_timeout=5,
    )
    assert any("'reading'" in line and "still consuming on primary" in line for line in said)
    assert groups.applied == ["stopped"]
    moved = {g.group: g for g in report.groups}
    assert moved["stopped"].exact and not moved["stopped"].skipped
    assert "1 member(s) still consuming on primary" in moved["reading"].skipped
    assert not moved["reading"].exact
    assert report.failed_steps == ["groups"] and not report.done
    # The other steps still ran: the flow paused, the way back resumed.
    assert log == ["pause primary->backup", "resume backup->primary"]
    # Its consumers stopped, a second run moves it.
    groups.members.clear()
    again = switchover(
        flow, control, reverse_flow=back, say=said.append, poll_seconds=0.0, drain_timeout=5
    )
    assert groups.applied == ["stopped", "reading", "stopped"]
    assert again.done and all(g.exact for g in again.groups)
