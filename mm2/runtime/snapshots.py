"""What the MetricsRegistry (mm2.runtime.metrics) hands its readers, the REST API and the
metrics endpoint: frozen figures per source partition, per checkpointed group partition and
per flow, named after Apache MM2's metrics (reference §5)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "NO_SAMPLES",
    "CheckpointSnapshot",
    "FlowEvent",
    "PartitionSnapshot",
    "SchemaSyncSnapshot",
    "Spread",
]


@dataclass(frozen=True)
class Spread:
    """min, max and avg of the samples of the last 30 s: Apache's windowed Min/Max/Avg stats,
    NaN when there was none (as Kafka's metrics give them)."""

    min: float = float("nan")
    max: float = float("nan")
    avg: float = float("nan")


NO_SAMPLES = Spread()


@dataclass(frozen=True)
class PartitionSnapshot:
    """Figures for one source partition, named after MM2's metrics (reference §5)."""

    source: str
    target: str
    topic: str
    partition: int
    target_topic: str
    record_count: int
    byte_count: int
    skipped_count: int
    record_rate: float
    byte_rate: float
    replication_latency_ms_min: float
    replication_latency_ms_max: float
    replication_latency_ms_avg: float
    record_age_ms_min: float
    record_age_ms_max: float
    record_age_ms_avg: float
    lag_records: int
    lag_seconds: float
    owner: int | None = None
    gone_count: int = 0
    truncated_count: int = 0
    # Apache's Value and windowed stats (the fields above are since the process started).
    replication_latency_ms: float = 0.0
    record_age_ms: float = 0.0
    recent_replication_latency_ms: Spread = NO_SAMPLES
    recent_record_age_ms: Spread = NO_SAMPLES
    # The copy task's consumer's records-lag at its last committed batch (None: not known).
    fetch_lag_records: int | None = None


@dataclass(frozen=True)
class CheckpointSnapshot:
    """checkpoint-latency-ms of one group's downstream partition (MirrorCheckpointConnector)."""

    source: str
    target: str
    group: str
    topic: str
    partition: int
    checkpoint_count: int
    checkpoint_latency_ms: float
    checkpoint_latency_ms_min: float
    checkpoint_latency_ms_max: float
    checkpoint_latency_ms_avg: float
    recent_checkpoint_latency_ms: Spread = NO_SAMPLES


@dataclass(frozen=True)
class SchemaSyncSnapshot:
    """A flow's schema sync (MirrorSchemaConnector): whether the flow keeps its records' schema
    IDs or translates them, and what its passes wrote since the process started."""

    source: str
    target: str
    id_mode: str  # "kept" or "translated"
    versions_registered: int
    mappings_written: int


@dataclass(frozen=True)
class FlowEvent:
    """Something an operator must hear of that a state does not show for long: a source topic
    re-created, records deleted before they were copied, a source log found truncated."""

    time_ms: int
    kind: str  # "topic-recreated", "records-gone", "log-truncated", "transactions-ended"
    message: str
