"""Per-partition replication figures that the REST API and the metrics endpoint read."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from mm2.copy.routes import Route
from mm2.copy.stats import CopyStats
from mm2.runtime.snapshots import (
    NO_SAMPLES,
    CheckpointSnapshot,
    FlowEvent,
    PartitionSnapshot,
    SchemaSyncSnapshot,
    Spread,
)

__all__ = ["MetricsRegistry"]

EVENTS_KEPT = 20  # per flow, the newest

_WINDOW_MS = 30_000


@dataclass(frozen=True)
class _Batch:
    """One committed batch in the rate window: when, how much, and its latency and age spread
    (age None when the copy task did not measure it)."""

    done: int
    records: int
    bytes: int
    latency: tuple[float, float, float]  # min, max, sum over the records
    age: tuple[float, float, float] | None


@dataclass
class _Stats:
    target_topic: str
    record_count: int = 0
    byte_count: int = 0
    skipped_count: int = 0
    gone_count: int = 0  # deleted from the source before they were copied
    truncated_count: int = 0  # times the source's log was found truncated below the position
    position: int = -1
    end_offset: int = -1
    last_timestamp: int = -1
    latency_min: float = float("inf")
    latency_max: float = 0.0
    latency_sum: float = 0.0
    age_min: float = float("inf")
    age_max: float = 0.0
    age_sum: float = 0.0
    # Apache's plain record-age-ms and replication-latency-ms (its Value stat): the figures of
    # the newest record of the last committed batch.
    latency_last: float = 0.0
    age_last: float = 0.0
    window: deque[_Batch] = field(default_factory=deque)
    # Read from Kafka by the flow's LagMonitor: (records behind, age of the oldest not copied).
    kafka_lag: tuple[int, float] | None = None
    owner: int | None = None  # the copy task that has the partition now
    # The copy task's consumer's records-lag at its last committed batch: the source's end
    # offset in its last fetch answer less its position (None: no batch told it yet).
    fetch_lag: int | None = None


@dataclass
class _CheckpointStats:
    count: int = 0
    last: float = 0.0
    low: float = float("inf")
    high: float = 0.0
    total: float = 0.0
    window: deque[tuple[float, float]] = field(default_factory=deque)  # (time ms, latency)


class MetricsRegistry:
    """Thread-safe: Spark's callback thread records, REST threads read. One per worker, made
    by the composition root and handed to the herders' tasks, the lag monitors and the API."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stats: dict[tuple[str, str, str, int], _Stats] = {}
        self._checkpoints: dict[tuple[str, str, str, str, int], _CheckpointStats] = {}
        self._recreated: dict[tuple[str, str, str], int] = {}
        self._ended: dict[tuple[str, str], int] = {}
        # (source, target) -> {(target topic, partition): seconds held back by a transaction}
        self._open: dict[tuple[str, str], dict[tuple[str, int], float]] = {}
        self._events: dict[tuple[str, str], deque[FlowEvent]] = {}
        self._schemas: dict[tuple[str, str], SchemaSyncSnapshot] = {}

    def event(self, source: str, target: str, kind: str, message: str) -> None:
        """Keep an event of the flow (the newest EVENTS_KEPT), shown in /flows."""
        with self._lock:
            self._keep(source, target, kind, message)

    def _keep(self, source: str, target: str, kind: str, message: str) -> None:
        """event() with the lock held."""
        kept = self._events.setdefault((source, target), deque(maxlen=EVENTS_KEPT))
        kept.append(FlowEvent(int(time.time() * 1000), kind, message))

    def events(self, source: str, target: str) -> tuple[FlowEvent, ...]:
        """The flow's events, oldest first."""
        with self._lock:
            return tuple(self._events.get((source, target), ()))

    def _get(self, source: str, target: str, topic: str, partition: int, remote: str) -> _Stats:
        key = (source, target, topic, partition)
        stats = self._stats.get(key)
        if stats is None:
            stats = self._stats[key] = _Stats(remote)
        return stats

    def set_routes(self, source: str, target: str, routes: Mapping[str, Route]) -> None:
        """The flow's partitions now: new ones get series, and those of topics no longer
        copied (deleted, or left out by the filter) lose theirs, so that their last lag does
        not stay on /metrics (and in an alert) for good."""
        with self._lock:
            for key in [k for k in self._stats if k[:2] == (source, target)]:
                route = routes.get(key[2])
                if route is None or key[3] >= route.partitions:
                    del self._stats[key]
            for topic, route in routes.items():
                for p in range(route.partitions):
                    self._get(source, target, topic, p, route.target_topic)

    def keep_checkpoint_groups(self, source: str, target: str, groups: Iterable[str]) -> None:
        """Only these groups of the flow keep their checkpoint series (the others are gone
        from the source)."""
        keep = set(groups)
        with self._lock:
            for key in [k for k in self._checkpoints if k[:2] == (source, target)]:
                if key[2] not in keep:
                    del self._checkpoints[key]

    def forget_flow(self, source: str, target: str) -> None:
        """A removed flow's series, all of them."""
        flow = (source, target)
        with self._lock:
            self._stats = {k: v for k, v in self._stats.items() if k[:2] != flow}
            self._checkpoints = {k: v for k, v in self._checkpoints.items() if k[:2] != flow}
            self._recreated = {k: v for k, v in self._recreated.items() if k[:2] != flow}
            self._ended.pop(flow, None)
            self._open.pop(flow, None)
            self._events.pop(flow, None)
            self._schemas.pop(flow, None)

    def record_batch(self, source: str, target: str, results: Iterable[CopyStats]) -> None:
        with self._lock:
            for r in results:
                s = self._get(source, target, r.topic, r.partition, r.target_topic)
                s.position = max(s.position, r.position + 1)
                s.gone_count += r.gone
                s.truncated_count += r.truncated
                self._note_out_of_range(source, target, r)
                if r.records == 0:
                    continue
                # A batch's end offset is set only when the fetch answer showed more than it
                # copied (mm2.copy.loop._finish); otherwise the consumer had caught up.
                s.fetch_lag = max(0, r.source_end - r.position - 1) if r.source_end else 0
                s.record_count += r.records
                s.byte_count += r.bytes
                s.skipped_count += r.skipped
                s.last_timestamp = max(s.last_timestamp, r.max_timestamp)
                done = r.finished_ms
                s.latency_min = min(s.latency_min, done - r.max_timestamp)
                s.latency_max = max(s.latency_max, done - r.min_timestamp)
                latency_sum = done * r.records - r.sum_timestamp
                s.latency_sum += latency_sum
                # the newest record (the highest timestamp) is the batch's last in a partition
                s.latency_last = done - r.max_timestamp
                age = None
                if r.age_min_ms >= 0:
                    s.age_min = min(s.age_min, r.age_min_ms)
                    s.age_max = max(s.age_max, r.age_max_ms)
                    s.age_sum += r.age_sum_ms
                    s.age_last = r.age_min_ms
                    age = (float(r.age_min_ms), float(r.age_max_ms), float(r.age_sum_ms))
                latency = (
                    float(done - r.max_timestamp),
                    float(done - r.min_timestamp),
                    latency_sum,
                )
                s.window.append(_Batch(done, r.records, r.bytes, latency, age))

    def update_end_offsets(
        self, source: str, target: str, ends: Mapping[tuple[str, int], int]
    ) -> None:
        with self._lock:
            for (topic, partition), end in ends.items():
                stats = self._stats.get((source, target, topic, partition))
                if stats is not None:
                    stats.end_offset = end

    def lag_read_from_kafka(self, source: str, target: str) -> bool:
        """Whether the lag monitor has read every known partition of the flow: from then on the
        planner's own end-offset reads would only be overridden."""
        with self._lock:
            flow = [
                s for (src, tgt, _t, _p), s in self._stats.items() if (src, tgt) == (source, target)
            ]
            return bool(flow) and all(s.kafka_lag is not None for s in flow)

    def update_lag(
        self, source: str, target: str, rows: Mapping[tuple[str, int], tuple[str, int, float]]
    ) -> None:
        """Lag read from Kafka: (topic, partition) -> (remote topic, records, seconds)."""
        with self._lock:
            for (topic, partition), (remote, records, seconds) in rows.items():
                stats = self._get(source, target, topic, partition, remote)
                stats.kafka_lag = (records, seconds)

    def set_owners(self, source: str, target: str, owners: Mapping[tuple[str, int], int]) -> None:
        """Which copy task has each partition (None for the partitions not dealt)."""
        with self._lock:
            for (src, tgt, topic, partition), stats in self._stats.items():
                if (src, tgt) == (source, target):
                    stats.owner = owners.get((topic, partition))

    def _note_out_of_range(self, source: str, target: str, r: CopyStats) -> None:
        where = f"{r.topic}-{r.partition}"
        if r.gone:
            said = f"{where}: {r.gone} record(s) deleted from the source before they were copied"
            self._keep(source, target, "records-gone", said)
        if r.truncated:
            said = f"{where}: the source's log was truncated below the position; copied again"
            self._keep(source, target, "log-truncated", said)

    def topic_recreated(self, source: str, target: str, topic: str) -> None:
        """A source topic found deleted and created again since its positions were stored: its
        partitions' positions start over (the new topic is copied from its start)."""
        said = f"source topic {topic} was deleted and created again: copied from its start"
        self.event(source, target, "topic-recreated", said)
        with self._lock:
            key = (source, target, topic)
            self._recreated[key] = self._recreated.get(key, 0) + 1
            for (src, tgt, name, _), stats in self._stats.items():
                if (src, tgt, name) == key:
                    stats.position = -1

    def transactions_ended(self, source: str, target: str, partitions: Sequence[str]) -> None:
        """Target partitions (`topic-partition`) that the flow's fenced copy tasks freed of a
        transaction an earlier epoch of theirs left open (mm2.copy.fencing)."""
        said = (
            f"ended the transactions earlier copy tasks left open on {', '.join(partitions)}; "
            "their records are copied again from the last committed positions"
        )
        self.event(source, target, "transactions-ended", said)
        with self._lock:
            key = (source, target)
            self._ended[key] = self._ended.get(key, 0) + len(partitions)

    def ended_transactions(self) -> dict[tuple[str, str], int]:
        """(source, target) -> partitions freed of a left-open transaction so far."""
        with self._lock:
            return dict(self._ended)

    def set_open_transactions(
        self, source: str, target: str, held: Mapping[tuple[str, int], float]
    ) -> None:
        """The target partitions a transaction nobody ends holds back, with for how long
        (mm2.client.open_transactions); replaces what the flow's last check found."""
        with self._lock:
            self._open[(source, target)] = dict(held)

    def open_transactions(self) -> dict[tuple[str, str, str, int], float]:
        """(source, target, target topic, partition) -> seconds held back."""
        with self._lock:
            return {
                (source, target, topic, partition): seconds
                for (source, target), held in self._open.items()
                for (topic, partition), seconds in held.items()
            }

    def recreated_topics(self) -> dict[tuple[str, str, str], int]:
        """(source, target, topic) -> how often it was found re-created."""
        with self._lock:
            return dict(self._recreated)

    def record_checkpoints(
        self, source: str, target: str, group: str, latencies: Mapping[tuple[str, int], float]
    ) -> None:
        """Checkpoints written for `group`: (downstream topic, partition) -> latency in ms."""
        now = time.time() * 1000
        with self._lock:
            for (topic, partition), latency in latencies.items():
                key = (source, target, group, topic, partition)
                c = self._checkpoints.setdefault(key, _CheckpointStats())
                c.count += 1
                c.last = latency
                c.low = min(c.low, latency)
                c.high = max(c.high, latency)
                c.total += latency
                c.window.append((now, latency))
                while c.window and c.window[0][0] < now - _WINDOW_MS:
                    c.window.popleft()

    def record_schema_pass(
        self, source: str, target: str, *, id_mode: str, registered: int, mappings: int
    ) -> None:
        """A pass of the flow's schema sync: the ID mode it ended in and what it wrote."""
        with self._lock:
            was = self._schemas.get((source, target))
            self._schemas[(source, target)] = SchemaSyncSnapshot(
                source,
                target,
                id_mode,
                registered + (was.versions_registered if was else 0),
                mappings + (was.mappings_written if was else 0),
            )

    def schema_snapshot(self) -> list[SchemaSyncSnapshot]:
        with self._lock:
            return [s for _, s in sorted(self._schemas.items())]

    def checkpoint_snapshot(self) -> list[CheckpointSnapshot]:
        since = time.time() * 1000 - _WINDOW_MS
        with self._lock:
            return [
                CheckpointSnapshot(
                    *key,
                    c.count,
                    c.last,
                    c.low,
                    c.high,
                    c.total / c.count,
                    _spread(
                        [(v, v, v) for t, v in c.window if t >= since],
                        sum(1 for t, _ in c.window if t >= since),
                    ),
                )
                for key, c in sorted(self._checkpoints.items())
            ]

    def snapshot(self) -> list[PartitionSnapshot]:
        now = int(time.time() * 1000)
        out = []
        with self._lock:
            for (source, target, topic, partition), s in sorted(self._stats.items()):
                while s.window and s.window[0].done < now - _WINDOW_MS:
                    s.window.popleft()
                records = sum(w.records for w in s.window)
                size = sum(w.bytes for w in s.window)
                latencies = [w.latency for w in s.window]
                ages = [w.age for w in s.window if w.age is not None]
                aged = sum(w.records for w in s.window if w.age is not None)
                if s.kafka_lag is not None:
                    lag, lag_s = s.kafka_lag
                else:
                    lag = max(0, s.end_offset - max(s.position, 0)) if s.end_offset >= 0 else 0
                    lag_s = (now - s.last_timestamp) / 1000 if lag and s.last_timestamp > 0 else 0.0
                count = s.record_count
                out.append(
                    PartitionSnapshot(
                        source,
                        target,
                        topic,
                        partition,
                        s.target_topic,
                        count,
                        s.byte_count,
                        s.skipped_count,
                        records / (_WINDOW_MS / 1000),
                        size / (_WINDOW_MS / 1000),
                        s.latency_min if count else 0.0,
                        s.latency_max,
                        s.latency_sum / count if count else 0.0,
                        s.age_min if count else 0.0,
                        s.age_max,
                        s.age_sum / count if count else 0.0,
                        lag,
                        lag_s,
                        s.owner,
                        gone_count=s.gone_count,
                        truncated_count=s.truncated_count,
                        replication_latency_ms=s.latency_last,
                        record_age_ms=s.age_last,
                        recent_replication_latency_ms=_spread(latencies, records),
                        recent_record_age_ms=_spread(ages, aged),
                        fetch_lag_records=s.fetch_lag,
                    )
                )
        return out


def _spread(samples: Sequence[tuple[float, float, float]], n: int) -> Spread:
    """The min, max and avg of samples' (min, max, sum), `n` values in all."""
    if not samples or n <= 0:
        return NO_SAMPLES
    return Spread(
        min(s[0] for s in samples), max(s[1] for s in samples), sum(s[2] for s in samples) / n
    )
