"""What a copy task copied: a range of one source partition and its counts, runs and times."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["CopyResult", "WorkUnit"]


@dataclass(frozen=True)
class WorkUnit:
    """Records [start, until) of one source partition, for the same partition of target_topic."""

    topic: str
    partition: int
    start: int
    until: int
    target_topic: str


@dataclass
class CopyResult:
    """What copying one work unit did: counts, (upstream, downstream, length) runs and latency."""

    unit: WorkUnit
    records: int = 0
    bytes: int = 0
    skipped: int = 0
    runs: list[tuple[int, int, int]] = field(default_factory=list)
    min_timestamp: int = -1
    max_timestamp: int = -1
    sum_timestamp: int = 0
    finished_ms: int = 0
    # record-age-ms: how old records were when the copier read them (now - record timestamp).
    age_min_ms: int = -1
    age_max_ms: int = -1
    age_sum_ms: int = 0
