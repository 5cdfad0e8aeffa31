"""When each flow last proved alive: heartbeats the target acknowledged, checkpoint passes.

The heartbeat task records each Heartbeat the target cluster acknowledged; the checkpoint task
records each pass that wrote (and had acknowledged) every changed checkpoint of every group,
whether or not any changed. The metrics endpoint exports both as Unix timestamps, so an alert
can say "no heartbeat for 2 minutes" whatever the reason (target down, task failed, paused).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

__all__ = ["FlowLiveness", "Liveness"]


@dataclass(frozen=True)
class FlowLiveness:
    source: str
    target: str
    heartbeats: int
    last_heartbeat_s: float | None
    checkpoint_passes: int
    last_checkpoint_pass_s: float | None


@dataclass
class _Counts:
    heartbeats: int = 0
    last_heartbeat: float | None = None
    passes: int = 0
    last_pass: float | None = None


class Liveness:
    """Thread-safe: tasks record, the metrics endpoint reads. One per worker, like the
    MetricsRegistry; tasks find it in their TaskContext."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._flows: dict[tuple[str, str], _Counts] = {}

    def heartbeat(self, source: str, target: str, timestamp_s: float) -> None:
        """A heartbeat written at `timestamp_s` was acknowledged by the target."""
        with self._lock:
            counts = self._flows.setdefault((source, target), _Counts())
            counts.heartbeats += 1
            counts.last_heartbeat = max(counts.last_heartbeat or 0.0, timestamp_s)

    def checkpoint_pass(self, source: str, target: str, timestamp_s: float) -> None:
        """Every group's checkpoints were current on the target at `timestamp_s`."""
        with self._lock:
            counts = self._flows.setdefault((source, target), _Counts())
            counts.passes += 1
            counts.last_pass = max(counts.last_pass or 0.0, timestamp_s)

    def snapshot(self) -> list[FlowLiveness]:
        with self._lock:
            return [
                FlowLiveness(s, t, c.heartbeats, c.last_heartbeat, c.passes, c.last_pass)
                for (s, t), c in sorted(self._flows.items())
            ]
