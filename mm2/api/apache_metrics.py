"""mm2's figures under the names Apache MirrorMaker 2 users' dashboards and alerts query.

Prometheus sees a Java MM2 through the JMX exporter; the common rules (Strimzi's
`kafka-mirror-maker-2-metrics.yaml` and `kafka-connect-metrics.yaml`) write every MBean
attribute as a gauge named `<domain>_<type>_<attribute>` (lower case, `-` and `.` as `_`) with
the MBean's tags as labels, values as Kafka's JmxReporter quotes them. So:

- MirrorMaker's metrics, by each flow's `metric.names.formats` (KIP-1280, Kafka 4.3; default
  `legacy`, as Apache's): `legacy` gives
  `kafka_connect_mirror_mirrorsourceconnector_<attr>{source,target,topic,partition}` and
  `kafka_connect_mirror_mirrorcheckpointconnector_<attr>{source,target,group,topic,partition}`
  (`kafka.connect.mirror:type=MirrorSourceConnector,...`); `new` gives
  `kafka_connect_plugins_<attr>` with `connector` and `task` labels added
  (`kafka.connect:type=plugins,connector=...,task=...`); `legacy,new` gives both.
- Connect's per-connector task counts (`kafka_connect_worker_connector_<state>_task_count`) and
  the coordinator's assignment (`kafka_connect_coordinator_assigned_{connectors,tasks}`),
  whatever the formats. Connect's status gauges share their families with mm2's own
  (mm2.api.metrics) and are written there.
- The copy tasks' consumers' records-lag
  (`kafka_consumer_fetch_manager_records_lag{clientid,topic,partition}`, the source topic, the
  client.id Apache gives its source task's consumer), as of each partition's last committed
  batch: the copy tasks run in Spark's Python workers, and only what they commit comes back.

Values follow Apache's stats: `record-age-ms` and `replication-latency-ms` are the last value
(the newest record of the last committed batch), their `-min`/`-max`/`-avg` and the checkpoint
latency's are over the last 30 s (NaN when nothing happened in it, as Kafka's windowed stats).
mm2's own families keep their values since the process started.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from mm2.config.values import (
    METRIC_NAMES_FORMATS_DEFAULT,
    ValueProblem,
    parse_metric_names_formats,
)
from mm2.copy.consumer import replication_client_id
from mm2.errors import MM2Error
from mm2.runtime.metrics import MetricsRegistry
from mm2.runtime.naming import connector_name, split_flow
from mm2.runtime.snapshots import CheckpointSnapshot, PartitionSnapshot
from mm2.runtime.status import ConnectorStatus
from mm2.runtime.view import RuntimeView

__all__ = ["ApacheNamesCollector", "jmx_value"]

_LEGACY_SOURCE = "kafka_connect_mirror_mirrorsourceconnector_"
_LEGACY_CHECKPOINT = "kafka_connect_mirror_mirrorcheckpointconnector_"
_NEW = "kafka_connect_plugins_"
_SOURCE = "MirrorSourceConnector"
_CHECKPOINT = "MirrorCheckpointConnector"
_PARTITION = ("source", "target", "topic", "partition")
_GROUP = ("source", "target", "group", "topic", "partition")
_TASK = ("connector", "task")
# Connect's per-connector task counts (connect-worker-metrics,connector=...): the states Java
# counts; mm2 has no DESTROYED task, so that count is 0.
_TASK_COUNTS = ("running", "paused", "failed", "unassigned", "destroyed", "restarting")
# Kafka's Sanitizer.jmxSanitize: a tag value with other characters is quoted in the MBean name,
# and the JMX exporter's label keeps the quotes.
_JMX_PLAIN = re.compile(r"[\w\-%. \t]*")


def jmx_value(value: str) -> str:
    """A tag value as it appears in an MBean name, so in the JMX exporter's label."""
    if _JMX_PLAIN.fullmatch(value):
        return value
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("*", "\\*")
    escaped = escaped.replace("?", "\\?").replace("\n", "\\n")
    return f'"{escaped}"'


def _source_values(s: PartitionSnapshot) -> dict[str, float]:
    lat, age = s.recent_replication_latency_ms, s.recent_record_age_ms
    return {
        "record_count": s.record_count,
        "record_rate": s.record_rate,
        "record_age_ms": s.record_age_ms,
        "record_age_ms_min": age.min,
        "record_age_ms_max": age.max,
        "record_age_ms_avg": age.avg,
        "byte_count": s.byte_count,
        "byte_rate": s.byte_rate,
        "replication_latency_ms": s.replication_latency_ms,
        "replication_latency_ms_min": lat.min,
        "replication_latency_ms_max": lat.max,
        "replication_latency_ms_avg": lat.avg,
    }


def _checkpoint_values(c: CheckpointSnapshot) -> dict[str, float]:
    recent = c.recent_checkpoint_latency_ms
    return {
        "checkpoint_latency_ms": c.checkpoint_latency_ms,
        "checkpoint_latency_ms_min": recent.min,
        "checkpoint_latency_ms_max": recent.max,
        "checkpoint_latency_ms_avg": recent.avg,
    }


_SOURCE_DOCS = {
    "record_count": "records replicated (record-count)",
    "record_rate": "records replicated per second, last 30 s (record-rate)",
    "record_age_ms": "age of the newest record of the last batch when read (record-age-ms)",
    "record_age_ms_min": "min record age, last 30 s",
    "record_age_ms_max": "max record age, last 30 s",
    "record_age_ms_avg": "average record age, last 30 s",
    "byte_count": "bytes replicated (byte-count)",
    "byte_rate": "bytes replicated per second, last 30 s (byte-rate)",
    "replication_latency_ms": "latency of the newest record of the last committed batch",
    "replication_latency_ms_min": "min replication latency, last 30 s",
    "replication_latency_ms_max": "max replication latency, last 30 s",
    "replication_latency_ms_avg": "average replication latency, last 30 s",
}
_CHECKPOINT_DOCS = {
    "checkpoint_latency_ms": "latency of the group's last checkpoint (checkpoint-latency-ms)",
    "checkpoint_latency_ms_min": "min checkpoint latency, last 30 s",
    "checkpoint_latency_ms_max": "max checkpoint latency, last 30 s",
    "checkpoint_latency_ms_avg": "average checkpoint latency, last 30 s",
}


class _Families:
    """One gauge family per attribute, created on first use, under a prefix and label names."""

    def __init__(self, prefix: str, labels: Iterable[str], docs: Mapping[str, str]) -> None:
        self._prefix, self._labels, self._docs = prefix, list(labels), docs
        self.families: dict[str, GaugeMetricFamily] = {}

    def add(self, values: Mapping[str, float], labels: list[str]) -> None:
        for attr, value in values.items():
            family = self.families.get(attr)
            if family is None:
                family = self.families[attr] = GaugeMetricFamily(
                    self._prefix + attr, self._docs[attr], labels=self._labels
                )
            family.add_metric(labels, float(value))


def _add(
    legacy: _Families,
    new: _Families,
    chosen: frozenset[str],
    values: Mapping[str, float],
    tags: list[str],
    connector: str,
    task: int | None,
) -> None:
    """One row's series under the names `chosen` asks for (metric.names.formats): the legacy
    ones by their tags, the new ones also by connector and task (none without a task)."""
    if "legacy" in chosen:
        legacy.add(values, tags)
    if "new" in chosen and task is not None:
        new.add(values, [jmx_value(connector), str(task), *tags])


def _records_lag(
    partitions: Iterable[PartitionSnapshot], elsewhere: set[tuple[str, str]]
) -> GaugeMetricFamily:
    """The consumer's records-lag of each partition a copy task here has and has told."""
    family = GaugeMetricFamily(
        "kafka_consumer_fetch_manager_records_lag",
        "records on the source after the copy task's consumer position, as its last fetch "
        "answer said, at the partition's last committed batch (records-lag)",
        labels=["clientid", "topic", "partition"],
    )
    for s in partitions:
        if (s.source, s.target) in elsewhere or s.owner is None or s.fetch_lag_records is None:
            continue
        client = replication_client_id(f"{s.source}->{s.target}", s.owner)
        family.add_metric(
            [jmx_value(client), jmx_value(s.topic), str(s.partition)], s.fetch_lag_records
        )
    return family


class ApacheNamesCollector(Collector):
    """Apache's metric names for what this process runs (flows run elsewhere are skipped, as
    mm2's own families skip them)."""

    def __init__(self, mirror: RuntimeView, metrics: MetricsRegistry) -> None:
        self._mirror = mirror
        self._metrics = metrics

    def collect(self) -> Iterator[Metric]:
        elsewhere = {(v.source, v.target) for v in self._mirror.flows.views() if v.runs_on}
        statuses = [
            (flow, status)
            for flow, status in self._mirror.connectors.statuses()
            if split_flow(flow) not in elsewhere
        ]
        yield from self._mirror_metrics(elsewhere, statuses)
        yield from self._worker(statuses)

    def _formats(self, flow: str, plain: str) -> frozenset[str]:
        """The connector's `metric.names.formats` (Apache's default when unset or unknown)."""
        try:
            value = self._mirror.connectors.info(connector_name(flow, plain)).config.get(
                "metric.names.formats", METRIC_NAMES_FORMATS_DEFAULT
            )
            return parse_metric_names_formats(value)
        except (MM2Error, ValueProblem):
            return frozenset({METRIC_NAMES_FORMATS_DEFAULT})

    def _mirror_metrics(
        self, elsewhere: set[tuple[str, str]], statuses: list[tuple[str, ConnectorStatus]]
    ) -> Iterator[Metric]:
        formats: dict[tuple[str, str, str], frozenset[str]] = {}
        legacy_source = _Families(_LEGACY_SOURCE, _PARTITION, _SOURCE_DOCS)
        new_source = _Families(_NEW, (*_TASK, *_PARTITION), _SOURCE_DOCS)
        legacy_checkpoint = _Families(_LEGACY_CHECKPOINT, _GROUP, _CHECKPOINT_DOCS)
        new_checkpoint = _Families(_NEW, (*_TASK, *_GROUP), _CHECKPOINT_DOCS)
        by_connector = {
            _SOURCE: (legacy_source, new_source),
            _CHECKPOINT: (legacy_checkpoint, new_checkpoint),
        }
        checkpoint_tasks = {
            split_flow(flow): status.tasks[0].id
            for flow, status in statuses
            if status.name.endswith("." + _CHECKPOINT) and status.tasks
        }

        def add(
            plain: str,
            source: str,
            target: str,
            tags: tuple[str, ...],
            values: Mapping[str, float],
            task: int | None,
        ) -> None:
            """One partition's (or group partition's) series, under the names its flow's
            connector chose; `tags` are those after source and target."""
            flow = f"{source}->{target}"
            if (source, target, plain) not in formats:
                formats[source, target, plain] = self._formats(flow, plain)
            _add(
                *by_connector[plain],
                formats[source, target, plain],
                values,
                [jmx_value(v) for v in (source, target, *tags)],
                connector_name(flow, plain),
                task,
            )

        # a partition's series are its task's, as Apache registers them per task
        partitions = self._metrics.snapshot()
        for s in partitions:
            if (s.source, s.target) not in elsewhere:
                where = (s.target_topic, str(s.partition))
                add(_SOURCE, s.source, s.target, where, _source_values(s), s.owner)
        for c in self._metrics.checkpoint_snapshot():
            if (c.source, c.target) not in elsewhere:
                task = checkpoint_tasks.get((c.source, c.target))
                group = (c.group, c.topic, str(c.partition))
                add(_CHECKPOINT, c.source, c.target, group, _checkpoint_values(c), task)
        for families in (legacy_source, legacy_checkpoint, new_source, new_checkpoint):
            yield from families.families.values()
        yield _records_lag(partitions, elsewhere)

    def _worker(self, statuses: list[tuple[str, ConnectorStatus]]) -> Iterator[Metric]:
        counts = {
            state: GaugeMetricFamily(
                f"kafka_connect_worker_connector_{state}_task_count",
                f"the connector's tasks in state {state.upper()} on this worker",
                labels=["connector"],
            )
            for state in ("total", *_TASK_COUNTS)
        }
        for _, status in statuses:
            label = [jmx_value(status.name)]
            counts["total"].add_metric(label, len(status.tasks))
            for state in _TASK_COUNTS:
                n = sum(1 for t in status.tasks if t.state.lower() == state)
                counts[state].add_metric(label, n)
        yield from counts.values()
        connectors = GaugeMetricFamily(
            "kafka_connect_coordinator_assigned_connectors", "connectors this worker runs"
        )
        tasks = GaugeMetricFamily("kafka_connect_coordinator_assigned_tasks", "tasks it runs")
        connectors.add_metric([], len(statuses))
        tasks.add_metric([], sum(len(status.tasks) for _, status in statuses))
        yield from (connectors, tasks)
