"""MirrorSourceConnector: topics, partitions, configs and ACLs to the target, and the records.

The task is the flow's planner (docs/architecture.md, "The copy path"), over three parts built
at its start: the topic schedule keeps the target's topics in step (mm2.connectors.
topic_schedule), the epoch planner deals the routed partitions to copy tasks and runs them
(mm2.connectors.epochs; on Spark through mm2.pipeline.copy_job), and the positions feed reads
their committed positions back from Connect's offsets topic (mm2.connectors.positions_feed).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from mm2.config.model import Flow
from mm2.connect.spi import CopyTaskView, Task, TaskContext
from mm2.connectors.epochs import EpochPlanner, LazyPublisher
from mm2.connectors.flow_connector import FlowConnector
from mm2.connectors.left_open import LeftOpenWatch
from mm2.connectors.offset_syncs import offset_syncs_target, positions_from_syncs
from mm2.connectors.planner_parts import FlowParts
from mm2.connectors.positions_feed import PositionsFeed
from mm2.connectors.progress_group import ProgressGroup
from mm2.connectors.settle import Fencing, Settle
from mm2.connectors.task_specs import TaskSpecs
from mm2.connectors.topic_schedule import TopicSchedule, step
from mm2.connectors.topic_sync import TopicSync
from mm2.copy.assignment import AssignmentPublisher
from mm2.copy.fencing import end_left_open, fence_transactional_ids, held_in
from mm2.copy.positions import PositionsTopic
from mm2.copy.runner import CopyRunner
from mm2.copy.spec import TRANSACTION_TIMEOUT_MS
from mm2.kafka.config_topic import check_leader_epoch
from mm2.kafka.offsets import OffsetLister
from mm2.kafka.topics import TopicAdmin
from mm2.pipeline.copy_job import CopyJob
from mm2.pipeline.session import spark_context
from mm2.records import TP

__all__ = [
    "MirrorSourceConnector",
    "MirrorSourceTask",
    "SourceParts",
    "build_parts",
    "spark_conf",
]

log = logging.getLogger(__name__)
_POLL_S = 0.5  # between two looks of the planner task (epochs, topics, positions)


def spark_conf(config: Mapping[str, str]) -> dict[str, str]:
    """The `spark.*` keys a flow's connector config passes to the Spark session."""
    return {k: v for k, v in config.items() if k.startswith("spark.")}


@dataclass
class SourceParts:
    """What a MirrorSourceTask works with; build_parts makes the real ones."""

    planner: EpochPlanner
    schedule: TopicSchedule
    feed: PositionsFeed
    progress: ProgressGroup | None


def build_parts(flow: Flow, config: Mapping[str, str], context: TaskContext) -> SourceParts:
    """The composition of a flow's planner: Kafka clients, Spark's copy job, the metrics, the
    leadership it runs under."""
    metrics = context.metrics
    s = flow.settings.source
    settings = flow.copy_settings  # built once; every copy task is handed it as it is
    source_admin = settings.source_admin  # the copy tasks' source admin, built with the value
    read_committed = settings.source_consumer["isolation.level"] == "read_committed"
    positions = PositionsTopic.of(flow)
    schedule = TopicSchedule(
        flow.name,
        flow.source,
        flow.target,
        sync=TopicSync(flow, TopicAdmin(source_admin), TopicAdmin(flow.target_admin_config())),
        ends=OffsetLister(source_admin),
        metrics=metrics,
        read_committed=read_committed,
        refresh_seconds=s.refresh_topics_interval_seconds or 2,
        configs_seconds=s.sync_topic_configs_interval_seconds,
        acls_seconds=s.sync_topic_acls_interval_seconds,
    )
    feed = PositionsFeed(flow.name, flow.source, flow.target, positions, metrics)
    progress = ProgressGroup.for_flow(flow)

    def make_runner() -> CopyRunner:
        return CopyJob(spark_context(spark_conf(config)), flow.name)

    def fence(ids: list[str], timeout: float) -> None:
        fence_transactional_ids(
            flow.target_producer_config(), ids, positions.topic, timeout=timeout
        )

    def end_open(ids: list[str], topics: list[str], timeout: float) -> Mapping[TP, int]:
        configs = (flow.target_producer_config(), positions.consumer_config, positions.admin_config)
        return end_left_open(configs, ids, topics, flow=flow.name, timeout=timeout)

    parts = FlowParts(settings, positions, feed, schedule, metrics)
    fencing = Fencing(
        fence,
        leader=lambda: context.leader_epoch,
        check_leader=lambda lead: check_leader_epoch(
            positions.consumer_config, lead.topic, lead.epoch
        ),
        end_left_open=end_open,
        # A copy task's transaction lasts at most its transaction.timeout.ms (then the
        # coordinator aborts it); a partition held longer was left open.
        left_open=LeftOpenWatch(
            lambda topics: held_in(positions.admin_config, topics, 30.0),
            patience_s=TRANSACTION_TIMEOUT_MS / 1000 + 30,
            flow=flow.name,
        )
        if settings.exactly_once
        else None,
    )
    settle = Settle(
        parts,
        fencing=fencing,
        prove=lambda routes, whole_log: positions_from_syncs(
            flow,
            routes,
            settings.source_consumer,
            schema_ids=settings.schema_ids,
            whole_log=whole_log,
        ),
    )
    specs = TaskSpecs(
        parts,
        syncs_target=lambda: offset_syncs_target(flow),
        start_offsets=progress,
        is_heartbeats=flow.replication_policy().is_heartbeats_topic,
        leader=lambda: context.leader_epoch,
    )
    planner = EpochPlanner(
        parts,
        settle=settle,
        specs=specs,
        make_runner=make_runner,
        publisher=LazyPublisher(
            lambda: AssignmentPublisher(positions.producer_config, positions.topic, flow.name)
        ),
    )
    return SourceParts(planner, schedule, feed, progress)


class MirrorSourceTask(Task):
    """Keeps the target's topics in step with the source and runs the flow's copy tasks."""

    def __init__(
        self, build: Callable[[Flow, Mapping[str, str], TaskContext], SourceParts] = build_parts
    ) -> None:
        self._build = build
        self._parts: SourceParts | None = None
        self._paused = False

    def start(self, config: Mapping[str, str], context: TaskContext) -> None:
        self._flow = Flow.for_connector(config)
        self._parts = self._build(self._flow, config, context)

    def poll(self) -> float:
        parts = self._parts
        assert parts is not None, "start() first"
        parts.planner.prepare()
        if not self._paused:  # first: the first epoch waits for no periodic sync
            parts.planner.run_epochs()
        now = time.monotonic()
        # Each step apart: one cluster being away must not hold up the others' work.
        parts.schedule.run_due(now)
        step(self._flow.name, "reading positions", lambda: parts.feed.poll(parts.schedule.routes))
        if parts.progress is not None:
            parts.progress.maybe_commit(
                parts.feed.stored.offsets, parts.schedule.routes.keys(), now
            )
        # Twice a second: what it looks at has intervals of its own (the topic refresh, the
        # copy tasks' commits); each look costs the driver's CPU once per flow.
        return _POLL_S

    def pause(self) -> None:
        self._paused = True
        if self._parts is not None:
            self._parts.planner.end_epoch()

    def copy_tasks(self) -> Sequence[CopyTaskView]:
        return self._parts.planner.copy_tasks() if self._parts is not None else ()

    def resume(self) -> None:
        self._paused = False

    def stop(self) -> None:
        parts = self._parts
        if parts is None:
            return
        parts.planner.end_epoch(settle_timeout=3.0)  # a clean stop takes at most 10 s
        if parts.progress is not None:  # as MirrorMaker 1 does at exit
            parts.progress.commit(parts.feed.stored.offsets, parts.schedule.routes.keys())
        parts.feed.close()
        parts.planner.close()


class MirrorSourceConnector(FlowConnector):
    """One planner task per flow; it runs up to `tasks.max` copy tasks on Spark."""

    task_class = MirrorSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return self.one_task(self._flow.enabled)
