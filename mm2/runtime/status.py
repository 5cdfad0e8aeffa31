"""Connector and task states as Kafka Connect names them, and the status records REST reads."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["ConnectorStatus", "State", "TargetState", "TaskStatus"]

State = Literal["UNASSIGNED", "RUNNING", "PAUSED", "STOPPED", "FAILED", "RESTARTING"]
TargetState = Literal["STARTED", "PAUSED", "STOPPED"]


@dataclass(frozen=True)
class TaskStatus:
    """One task's state; `trace` is the error that failed it, or the error it is waiting to
    retry or restart after (and when); `restarts` counts the runner's restarts of it;
    `partitions` are a copy task's source partitions (`topic-partition`; None for others)."""

    id: int
    state: State
    worker_id: str
    trace: str | None = None
    restarts: int = 0
    partitions: tuple[str, ...] | None = None


@dataclass(frozen=True)
class ConnectorStatus:
    """A connector's state and its tasks'."""

    name: str
    state: State
    worker_id: str
    tasks: tuple[TaskStatus, ...]
    trace: str | None = None
    type: Literal["source", "sink"] = "source"
