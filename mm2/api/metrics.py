"""Prometheus exposition of MM2's metrics (reference §5), lag, connector/task states, process.

Read at scrape time from the runtime's registry, so nothing is kept twice. MM2's JMX names map
as `kafka.connect.mirror:type=MirrorSourceConnector,...` metric `record-count` ->
`kafka_connect_mirror_source_connector_record_count_total` (counters get `_total`), with the
same tags as labels (`source`, `target`, `topic` = the remote topic, `partition`).
Apache's own names (what Java MM2's dashboards query) come from mm2.api.apache_metrics.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import (
    GC_COLLECTOR,
    PLATFORM_COLLECTOR,
    PROCESS_COLLECTOR,
    CollectorRegistry,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from mm2.api.apache_metrics import ApacheNamesCollector, jmx_value
from mm2.api.liveness_metrics import Figure, LivenessCollector, flow_families
from mm2.api.process_metrics import ProcessTreeCollector
from mm2.runtime.flows import FlowView
from mm2.runtime.metrics import MetricsRegistry
from mm2.runtime.naming import split_flow
from mm2.runtime.snapshots import SchemaSyncSnapshot
from mm2.runtime.status import State
from mm2.runtime.view import RuntimeView

__all__ = ["MirrorCollector", "metrics_registry"]

_SOURCE = "kafka_connect_mirror_source_connector_"
_CHECKPOINT = "kafka_connect_mirror_checkpoint_connector_"
_PARTITION = ["source", "target", "topic", "partition"]
_GROUP = ["source", "target", "group", "topic", "partition"]
_STATES: tuple[State, ...] = (
    "UNASSIGNED",
    "RUNNING",
    "PAUSED",
    "STOPPED",
    "FAILED",
    "RESTARTING",
)

# The flows' schema syncs (MirrorSchemaConnector): IDs kept or translated in flight.
_SCHEMAS: tuple[Figure[SchemaSyncSnapshot], ...] = (
    (
        GaugeMetricFamily,
        "mm2_schema_ids_translated",
        "1 when the flow rewrites schema IDs in flight (the target registry numbers schemas "
        "its own way), 0 when the target keeps the source's IDs (IMPORT mode)",
        lambda s: s.id_mode == "translated",
    ),
    (
        CounterMetricFamily,
        "mm2_schema_versions_registered",
        "schema versions registered on the target registry",
        lambda s: s.versions_registered,
    ),
    (
        CounterMetricFamily,
        "mm2_schema_id_mappings",
        "source -> target schema ID mappings written to Kafka",
        lambda s: s.mappings_written,
    ),
)


class MirrorCollector(Collector):
    """Every figure of the runtime, as Prometheus metric families."""

    def __init__(self, mirror: RuntimeView, metrics: MetricsRegistry) -> None:
        self._mirror = mirror
        self._metrics = metrics

    def collect(self) -> Iterator[Metric]:
        # A flow another process runs is that process's to report: a standby exports no state,
        # lag or counters of it, so alerts and sums count each flow once (Connect's workers
        # export only the tasks they run).
        # Read once per scrape and passed down: concurrent scrapes share this collector.
        views = self._mirror.flows.views()
        elsewhere = {(v.source, v.target) for v in views if v.runs_on}
        yield from self._source(elsewhere)
        yield from self._checkpoints(elsewhere)
        yield from self._schemas(elsewhere)
        yield from self._states(elsewhere)
        yield self._flows(views)

    def _source(self, elsewhere: set[tuple[str, str]]) -> Iterator[Metric]:
        def gauge(name: str, doc: str) -> GaugeMetricFamily:
            return GaugeMetricFamily(name, doc, labels=_PARTITION)

        fams: dict[str, GaugeMetricFamily | CounterMetricFamily] = {
            "record_count": CounterMetricFamily(
                _SOURCE + "record_count", "records replicated", labels=_PARTITION
            ),
            "byte_count": CounterMetricFamily(
                _SOURCE + "byte_count", "bytes replicated", labels=_PARTITION
            ),
            "skipped": CounterMetricFamily(
                "mm2_skipped_oversized_records", "records skipped as too large", labels=_PARTITION
            ),
            "gone": CounterMetricFamily(
                "mm2_source_records_gone",
                "records deleted from the source (retention, DeleteRecords) before they were "
                "copied",
                labels=_PARTITION,
            ),
            "truncated": CounterMetricFamily(
                "mm2_source_log_truncations",
                "times the source's log was found truncated below the position (an unclean "
                "leader election): copied again from its start",
                labels=_PARTITION,
            ),
            "record_rate": gauge(_SOURCE + "record_rate", "records/s over the last 30 s"),
            "byte_rate": gauge(_SOURCE + "byte_rate", "bytes/s over the last 30 s"),
            "lag_records": gauge("mm2_replication_lag_records", "source records not yet copied"),
            "lag_seconds": gauge(
                "mm2_replication_lag_seconds", "seconds since the last copied record while behind"
            ),
        }
        for stat in ("min", "max", "avg"):
            for metric in ("replication_latency_ms", "record_age_ms"):
                fams[f"{metric}_{stat}"] = gauge(f"{_SOURCE}{metric}_{stat}", f"{metric} {stat}")
        for s in self._metrics.snapshot():
            if (s.source, s.target) in elsewhere:
                continue
            labels = [s.source, s.target, s.target_topic, str(s.partition)]
            values = {
                "record_count": s.record_count,
                "byte_count": s.byte_count,
                "skipped": s.skipped_count,
                "record_rate": s.record_rate,
                "gone": s.gone_count,
                "truncated": s.truncated_count,
                "byte_rate": s.byte_rate,
                "lag_records": s.lag_records,
                "lag_seconds": s.lag_seconds,
                "replication_latency_ms_min": s.replication_latency_ms_min,
                "replication_latency_ms_max": s.replication_latency_ms_max,
                "replication_latency_ms_avg": s.replication_latency_ms_avg,
                "record_age_ms_min": s.record_age_ms_min,
                "record_age_ms_max": s.record_age_ms_max,
                "record_age_ms_avg": s.record_age_ms_avg,
            }
            for key, value in values.items():
                fams[key].add_metric(labels, float(value))
        yield from fams.values()

    def _checkpoints(self, elsewhere: set[tuple[str, str]]) -> Iterator[Metric]:
        name = _CHECKPOINT + "checkpoint_latency_ms"
        fams = {
            "": GaugeMetricFamily(name, "latency of the last checkpoint", labels=_GROUP),
            "_min": GaugeMetricFamily(name + "_min", "checkpoint latency min", labels=_GROUP),
            "_max": GaugeMetricFamily(name + "_max", "checkpoint latency max", labels=_GROUP),
            "_avg": GaugeMetricFamily(name + "_avg", "checkpoint latency avg", labels=_GROUP),
        }
        count = CounterMetricFamily("mm2_checkpoint_count", "checkpoints emitted", labels=_GROUP)
        for c in self._metrics.checkpoint_snapshot():
            if (c.source, c.target) in elsewhere:
                continue
            labels = [c.source, c.target, c.group, c.topic, str(c.partition)]
            fams[""].add_metric(labels, c.checkpoint_latency_ms)
            fams["_min"].add_metric(labels, c.checkpoint_latency_ms_min)
            fams["_max"].add_metric(labels, c.checkpoint_latency_ms_max)
            fams["_avg"].add_metric(labels, c.checkpoint_latency_ms_avg)
            count.add_metric(labels, c.checkpoint_count)
        yield from fams.values()
        yield count
        recreated = CounterMetricFamily(
            "mm2_source_topic_recreated",
            "source topics found deleted and created again since their positions were stored "
            "(copied again from the start of their log)",
            labels=["source", "target", "topic"],
        )
        for (source, target, topic), times in sorted(self._metrics.recreated_topics().items()):
            if (source, target) not in elsewhere:
                recreated.add_metric([source, target, topic], times)
        yield recreated
        ended = CounterMetricFamily(
            "mm2_offsets_transactions_ended",
            "target partitions (of the offsets topic or a remote topic) freed of a transaction "
            "an earlier copy task left open (a broker stopped while it ended); copied again "
            "from the last commit",
            labels=["source", "target"],
        )
        for (source, target), times in sorted(self._metrics.ended_transactions().items()):
            if (source, target) not in elsewhere:
                ended.add_metric([source, target], times)
        yield ended
        held = GaugeMetricFamily(
            "mm2_target_open_transaction_seconds",
            "seconds a transaction nobody ends has held a target partition back (remote "
            "topics and the offsets topic; read_committed readers stop there)",
            labels=["source", "target", "topic", "partition"],
        )
        for (source, target, topic, partition), seconds in sorted(
            self._metrics.open_transactions().items()
        ):
            if (source, target) not in elsewhere:
                held.add_metric([source, target, topic, str(partition)], seconds)
        yield held

    def _schemas(self, elsewhere: set[tuple[str, str]]) -> Iterator[Metric]:
        """The flows' schema syncs (MirrorSchemaConnector): IDs kept or translated in flight."""
        syncs = self._metrics.schema_snapshot()
        return flow_families(_SCHEMAS, [s for s in syncs if (s.source, s.target) not in elsewhere])

    def _states(self, elsewhere: set[tuple[str, str]]) -> Iterator[Metric]:
        connector = GaugeMetricFamily(
            "kafka_connect_connector_status",
            "1 for the connector's current state",
            labels=["connector", "source", "target", "state"],
        )
        task = GaugeMetricFamily(
            "kafka_connect_connector_task_status",
            "1 for the task's current state",
            labels=["connector", "task", "source", "target", "state"],
        )
        restarts = CounterMetricFamily(
            "mm2_task_restarts",
            "times the runner restarted the task after a failure",
            labels=["connector", "task", "source", "target"],
        )
        connectors = GaugeMetricFamily("kafka_connect_worker_connector_count", "connectors")
        tasks = GaugeMetricFamily("kafka_connect_worker_task_count", "tasks")
        n_connectors = n_tasks = 0
        for flow, status in self._mirror.connectors.statuses():
            source, target = split_flow(flow)
            if (source, target) in elsewhere:
                continue
            name = status.name
            n_connectors += 1
            for state in _STATES:
                connector.add_metric([name, source, target, state], status.state == state)
            # Connect's status as the JMX exporter writes it (Strimzi's rules, and the
            # ConnectFailedConnector alert): one series, on the current state in lower case.
            connect_name = jmx_value(name)
            connector.add_sample(
                connector.name, {"connector": connect_name, "status": status.state.lower()}, 1
            )
            for t in status.tasks:
                n_tasks += 1
                restarts.add_metric([name, str(t.id), source, target], t.restarts)
                for state in _STATES:
                    task.add_metric([name, str(t.id), source, target, state], t.state == state)
                labels = {"connector": connect_name, "task": str(t.id), "status": t.state.lower()}
                task.add_sample(task.name, labels, 1)
        connectors.add_metric([], n_connectors)
        tasks.add_metric([], n_tasks)
        yield from (connector, task, restarts, connectors, tasks)

    def _flows(self, views: list[FlowView]) -> Metric:
        """mm2_flow_state: 1 on the flow's derived state (as /flows shows it), the cause on
        the series of a state other than RUNNING."""
        family = GaugeMetricFamily(
            "mm2_flow_state",
            "1 for the flow's current state (RUNNING, DEGRADED, FAILED, ...)",
            labels=["source", "target", "state", "cause"],
        )
        for view in views:
            if view.runs_on:
                continue
            for state in _FLOW_STATES:
                current = view.state == state
                cause = (view.cause or "")[:200] if current else ""
                family.add_metric([view.source, view.target, state, cause], current)
        return family


_FLOW_STATES = ("RUNNING", "DEGRADED", "FAILED", "PAUSED", "STOPPED", "UNASSIGNED", "DISABLED")


def metrics_registry(mirror: RuntimeView) -> CollectorRegistry:
    """A registry of our own (not the global one): the mirror's figures and process metrics."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(MirrorCollector(mirror, mirror.metrics))
    registry.register(ApacheNamesCollector(mirror, mirror.metrics))
    registry.register(LivenessCollector(mirror.liveness))
    registry.register(ProcessTreeCollector())
    for collector in (PROCESS_COLLECTOR, PLATFORM_COLLECTOR, GC_COLLECTOR):
        registry.register(collector)
    return registry
