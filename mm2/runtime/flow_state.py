"""A flow's state and its cause, derived from its connectors, their tasks and its lag.

RUNNING only when every connector and task runs and the lag read from Kafka shows copying;
otherwise, first match wins:
- DISABLED: `A->B.enabled = false` (heartbeats only);
- FAILED: a connector or task failed (the cause is its error);
- STOPPED / PAUSED: every connector was stopped / paused (or stopped);
- UNASSIGNED: another process runs the flow (the cause names the leader) or none does yet;
- DEGRADED: a task is restarting or not started, the lag cannot be read (a cluster is down),
  or records wait in a partition whose position has not moved for `STALL_S` seconds.
"""

from __future__ import annotations

from collections.abc import Sequence

from mm2.config.model import Flow
from mm2.runtime.lag import LagMonitor
from mm2.runtime.status import ConnectorStatus

__all__ = ["STALL_S", "flow_state"]

STALL_S = 30.0


def _last_line(trace: str | None) -> str:
    lines = [ln.strip() for ln in (trace or "").strip().splitlines() if ln.strip()]
    return lines[-1] if lines else "no detail"


def flow_state(
    flow: Flow,
    statuses: Sequence[ConnectorStatus],
    *,
    runs_here: bool,
    leader: str | None,
    monitor: LagMonitor | None,
) -> tuple[str, str | None]:
    """(state, cause); the cause is None only when RUNNING."""
    if not flow.enabled:
        return "DISABLED", f"replication is off ({flow.name}.enabled = false): heartbeats only"
    if not statuses:
        return "UNASSIGNED", "no connector of this flow is available"
    for status in statuses:
        if status.state == "FAILED":
            return "FAILED", f"{status.name}: {_last_line(status.trace)}"
        for task in status.tasks:
            if task.state == "FAILED":
                return "FAILED", f"{status.name}-{task.id}: {_last_line(task.trace)}"
    states = {s.state for s in statuses}
    if states == {"STOPPED"}:
        return "STOPPED", "every connector was stopped (PUT .../resume starts them)"
    if states <= {"PAUSED", "STOPPED"}:
        return "PAUSED", "paused (PUT .../resume carries on where it stopped)"
    if not runs_here:
        if leader:
            return "UNASSIGNED", f"runs on {leader}, the leader of {flow.target}"
        return "UNASSIGNED", f"no process leads {flow.target} yet (an election is under way)"
    for status in statuses:
        if status.state in ("PAUSED", "STOPPED"):
            return "DEGRADED", f"{status.name} is {status.state} (the others run)"
        if status.state != "RUNNING":
            return "DEGRADED", f"{status.name} is {status.state}: {_last_line(status.trace)}"
        for task in status.tasks:
            if task.state != "RUNNING":
                return "DEGRADED", f"{status.name}-{task.id} is {task.state}: " + _last_line(
                    task.trace
                )
    report = monitor.report if monitor is not None else None
    if report is not None and report.problems:
        return "DEGRADED", report.problems[0]
    stalled, partition, waiting = monitor.stall() if monitor is not None else (0.0, None, 0)
    if report is not None and stalled >= STALL_S:
        return "DEGRADED", (
            f"copying stalled: {partition} has {waiting} records waiting and its position has "
            f"not moved for {stalled:.0f} s ({report.records} behind in all)"
        )
    return "RUNNING", None
