"""What a switchover reports and what it drives: its steps, the partitions at the switch, each
group's move, and the FlowControl over the running mirror's flows (mm2.client.switchover runs
the steps)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Protocol

from mm2.client.lag import LagReport, PartitionLag
from mm2.errors import ConflictError

__all__ = [
    "FlowControl",
    "GroupMove",
    "Step",
    "SwitchoverError",
    "SwitchoverReport",
]


class SwitchoverError(ConflictError):
    """A switchover that stopped before changing anything it should not (the message says
    where and why); what it did so far is in `report`."""

    def __init__(self, message: str, report: SwitchoverReport) -> None:
        super().__init__(message)
        self.report = report


class FlowControl(Protocol):
    """The running mirror's flows (its REST API, or the process itself)."""

    def state(self, source: str, target: str) -> str | None:
        """RUNNING, PAUSED, ... ; None when the mirror has no such flow."""

    def pause(self, source: str, target: str) -> None: ...

    def resume(self, source: str, target: str) -> None: ...


@dataclass(frozen=True)
class Step:
    """A step that ran: how long it took, what it said, and whether it failed: one that
    stopped the switchover (SwitchoverError), or the registries' step, after which the
    others still run."""

    name: str
    seconds: float
    said: tuple[str, ...] = ()
    failed: bool = False

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "seconds": round(self.seconds, 3),
            "said": list(self.said),
            "failed": self.failed,
        }


@dataclass(frozen=True)
class GroupMove:
    """A group's move: partitions committed on B, kept (B was ahead), and why it was skipped."""

    group: str
    committed_as: str
    committed: int = 0
    kept: int = 0
    exact: bool = False
    rereads_at_most: int | None = None
    skipped: str = ""

    def to_json(self) -> dict[str, object]:
        return asdict(self)


@dataclass
class SwitchoverReport:
    flow: str
    dry_run: bool
    steps: list[Step] = field(default_factory=list)
    # The flow's lag at the switch (its heartbeats topics left out): when drained, or last read.
    lag: LagReport | None = None
    groups: list[GroupMove] = field(default_factory=list)
    done: bool = False

    @property
    def failed_steps(self) -> list[str]:
        return [s.name for s in self.steps if s.failed]

    @property
    def partitions(self) -> tuple[PartitionLag, ...]:
        return self.lag.partitions if self.lag else ()

    @property
    def not_copied(self) -> int:
        return self.lag.records if self.lag else 0

    @property
    def not_copied_seconds(self) -> float:
        return self.lag.seconds if self.lag else 0.0

    def to_json(self) -> dict[str, object]:
        return {
            "flow": self.flow,
            "dry_run": self.dry_run,
            "done": self.done,
            "failed_steps": self.failed_steps,
            "recovery_point": {"records": self.not_copied, "seconds": self.not_copied_seconds},
            "steps": [s.to_json() for s in self.steps],
            "partitions": [_partition_json(p) for p in self.partitions],
            "groups": [g.to_json() for g in self.groups],
        }


def _partition_json(p: PartitionLag) -> dict[str, object]:
    """One source partition at the switch: its end, the next offset the mirror would copy, and
    what it had not copied (records, and the age in seconds of the oldest of them)."""
    return {
        "topic": p.topic,
        "partition": p.partition,
        "source_end": p.log_end,
        "copied_to": p.position,
        "not_copied": p.records,
        "not_copied_seconds": p.seconds,
    }
