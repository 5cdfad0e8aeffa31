"""The checkpoint task's groups stay bounded: a group deleted or expired on the source leaves
its checkpoints, their sync and their metrics series at the next refresh (2,000 one-shot
console-consumer groups leave nothing behind)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mm2.connectors.checkpoint import MirrorCheckpointTask
from mm2.policies.filter import GroupFilter
from mm2.runtime.metrics import MetricsRegistry


class Everything(GroupFilter):
    def should_replicate_group(self, group: str) -> bool:
        return True


@dataclass
class Flow:
    name: str = "a->b"
    source: str = "a"
    target: str = "b"


class SourceGroups:
    def __init__(self, groups: list[str]) -> None:
        self.groups = groups

    def list_groups(self) -> list[str]:
        return list(self.groups)


def _task(groups: list[str], metrics: MetricsRegistry) -> Any:
    task: Any = object.__new__(MirrorCheckpointTask)
    task._flow, task._metrics, task._share = Flow(), metrics, None
    task._group_filter, task._groups = Everything(), []
    task._source_groups = SourceGroups(groups)
    task._checkpoints = {}
    return task


def test_groups_gone_from_the_source_leave_checkpoints_and_metrics_at_the_next_refresh() -> None:
    metrics = MetricsRegistry()
    one_shot = [f"console-consumer-{i}" for i in range(2000)]
    task = _task(["billing", *one_shot], metrics)
    task._refresh_groups()
    for group in task._groups:  # each got a checkpoint
        task._checkpoints[group] = {"tp": "checkpoint"}
        metrics.record_checkpoints("a", "b", group, {("a.orders", 0): 1.0})
    task._source_groups.groups = ["billing"]  # the one-shot groups expired on the source
    task._refresh_groups()
    assert list(task._checkpoints) == ["billing"] and task._groups == ["billing"]
    assert [c.group for c in metrics.checkpoint_snapshot()] == ["billing"]
