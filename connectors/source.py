"""MirrorSourceConnector: topics, partitions, configs and ACLs to the target, and the records."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from pathlib import Path

from connectors.every import Every
from connectors.offset_syncs import OffsetSyncEmitter
from connectors.topic_sync import TopicSync
from mm2.config.model import Flow
from mm2.connect.spi import Connector, Task, TaskContext
from mm2.errors import KafkaClientError, RecordTooLargeError
from mm2.kafka.copier import CopyResult
from mm2.kafka.offsets import OffsetLister
from mm2.kafka.topics import TopicAdmin
from mm2.pipeline.query import MirrorQuery, spark_session
from mm2.pipeline.routes import Route, write_routes
from mm2.pipeline.spec import PipelineSpec
from mm2.runtime.metrics import METRICS

__all__ = ["MirrorSourceConnector", "MirrorSourceTask", "flow_state_dir", "spark_conf"]

log = logging.getLogger(__name__)


def spark_conf(config: Mapping[str, str]) -> dict[str, str]:
    """The `spark.*` keys a flow's connector config passes to the Spark session."""
    return {k: v for k, v in config.items() if k.startswith("spark.")}


def flow_state_dir(config: Mapping[str, str]) -> Path:
    """Where a flow keeps its Spark checkpoint and route file."""
    base = Path(config.get("mm2.state.dir", "mm2-state"))
    return base / f"{config['source.cluster.alias']}_to_{config['target.cluster.alias']}"


class MirrorSourceTask(Task):
    """Keeps the target's topics in step with the source and runs the flow's Spark query."""

    def start(self, config: Mapping[str, str], context: TaskContext) -> None:
        flow = Flow.for_connector(config)
        self._flow = flow
        state = flow_state_dir(config)
        self._routes_path = state / "routes.json"
        source_admin = flow.source_admin_config()
        self._sync = TopicSync(
            flow, TopicAdmin(source_admin), TopicAdmin(flow.target_admin_config())
        )
        self._refresh = Every(flow.interval_seconds("refresh.topics") or 2)
        self._configs = Every(flow.interval_seconds("sync.topic.configs"))
        self._acls = Every(flow.interval_seconds("sync.topic.acls"))
        self._syncs = OffsetSyncEmitter.for_flow(flow)
        # librdkafka reads committed data unless told otherwise (Java's default is uncommitted):
        # aborted transactions are not mirrored. Planning must use the same bound (the LSO).
        consumer = {"isolation.level": "read_committed", **flow.source_consumer_config()}
        self._read_committed = consumer["isolation.level"] == "read_committed"
        self._ends = OffsetLister(source_admin)
        self._routes: dict[str, Route] = {}
        self._refresh_routes()  # remote topics are created while Spark starts
        spark = spark_session(spark_conf(config))
        spec = PipelineSpec(
            flow=flow.name,
            source_consumer=consumer,
            source_admin=source_admin,
            target_producer=flow.target_producer_config(),
            routes_path=str(self._routes_path),
            tasks_max=flow.tasks_max,
            slots=spark.sparkContext.defaultParallelism,
            max_records_per_partition=flow.get_int("pipeline.max.records.per.partition", 200_000),
            from_latest=consumer.get("auto.offset.reset", "earliest") == "latest",
            read_committed=self._read_committed,
            skip_oversized=flow.get_bool("skip.oversized.records", False),
        )
        self._query = MirrorQuery(
            spark,
            spec,
            state / "spark",
            self._on_batch,
            trigger_interval_ms=flow.get_int("pipeline.trigger.interval.ms", 250),
        )
        self._paused = False
        self._copied = 0
        self._last_report = time.monotonic()
        self._query.start()
        log.info("%s: mirroring, Spark checkpoint in %s", flow.name, self._query.checkpoint_dir)

    def _refresh_routes(self) -> None:
        routes = self._sync.refresh_topics()
        if routes != self._routes:
            write_routes(self._routes_path, routes)
            self._routes = routes
            METRICS.set_routes(self._flow.source, self._flow.target, routes)

    def _update_lag(self) -> None:
        partitions = [(t, p) for t, r in self._routes.items() for p in range(r.partitions)]
        ends = self._ends.offsets(partitions, latest=True, read_committed=self._read_committed)
        METRICS.update_end_offsets(self._flow.source, self._flow.target, ends)

    def _on_batch(self, batch_id: int, results: list[CopyResult]) -> None:
        """Runs on Spark's callback thread once a micro-batch's records are on the target."""
        METRICS.record_batch(self._flow.source, self._flow.target, results)
        copied = sum(r.records for r in results)
        self._copied += copied
        log.debug("%s: batch %d copied %d records", self._flow.name, batch_id, copied)
        for r in results:
            log.debug(
                "%s: batch %d %s-%d [%d, %d) copied %d",
                self._flow.name, batch_id, r.unit.topic, r.unit.partition, r.unit.start,
                r.unit.until, r.records,
            )  # fmt: skip
        now = time.monotonic()
        if now - self._last_report >= 30:
            log.info("%s: %d records copied so far", self._flow.name, self._copied)
            self._last_report = now
        for res in results:
            if res.skipped:
                log.warning(
                    "%s: skipped %d record(s) of %s-%d larger than %s accepts",
                    self._flow.name, res.skipped, res.unit.topic, res.unit.partition,
                    res.unit.target_topic,
                )  # fmt: skip
        self._syncs.emit(results)

    def poll(self) -> float:
        now = time.monotonic()
        if self._refresh.due(now):
            self._refresh_routes()
            self._update_lag()
        if self._configs.due(now):
            self._sync.sync_configs()
        if self._acls.due(now):
            self._sync.sync_acls()
        if not self._paused and not self._query.running:
            self._restart_query()
        return 0.5

    def _restart_query(self) -> None:
        failure = self._query.failure() or "the pipeline stopped"
        if "RecordTooLargeError" in failure:
            line = next(
                (ln for ln in failure.splitlines() if "RecordTooLargeError:" in ln), failure
            )
            raise RecordTooLargeError(line.split("RecordTooLargeError:", 1)[1].strip())
        self._query.start()
        raise KafkaClientError(
            f"{self._flow.name}: pipeline restarted after: {failure}", retriable=True
        )

    def pause(self) -> None:
        self._paused = True
        self._query.stop()

    def resume(self) -> None:
        self._paused = False
        self._copied = 0
        self._last_report = time.monotonic()
        self._query.start()

    def stop(self) -> None:
        query = getattr(self, "_query", None)
        if query is not None:
            query.stop()
        syncs = getattr(self, "_syncs", None)
        if syncs is not None:
            syncs.close()


class MirrorSourceConnector(Connector):
    """One task per flow: the Spark query spreads the copying over `tasks.max` partitions."""

    task_class = MirrorSourceTask

    def start(self, config: Mapping[str, str]) -> None:
        self._config = dict(config)
        self._flow = Flow.for_connector(config)

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        if not self._flow.enabled:
            return []
        return [{**self._config, "task.index": "0"}]
