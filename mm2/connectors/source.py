"""MirrorSourceConnector: topics, partitions, configs and ACLs to the target, and the records.

The task is the flow's planner (docs/architecture.md, "The copy path"): it keeps the target's
topics in step, deals the routed partitions to copy tasks, runs them as one Spark job per
epoch, and reads their committed positions back from Connect's offsets topic on the target.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import time
import uuid
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from mm2.config.model import Flow
from mm2.connect.spi import Connector, Task, TaskContext
from mm2.connectors.deal import Placed, deal, extend_deal, task_count
from mm2.connectors.every import Every
from mm2.connectors.offset_syncs import offset_syncs_target
from mm2.connectors.progress_group import ProgressGroup
from mm2.connectors.topic_sync import TopicSync
from mm2.copy.assignment import AssignmentPublisher
from mm2.copy.positions import PositionRecord, PositionsTopic, StoredPositions
from mm2.copy.positions_reader import PositionsReader
from mm2.copy.routes import Route
from mm2.copy.spec import Assignment, CopyTaskSpec
from mm2.copy.stats import CopyStats
from mm2.copy.transaction import fence_transactional_ids
from mm2.errors import ConfigError, KafkaClientError
from mm2.kafka.offsets import OffsetLister
from mm2.kafka.topics import TopicAdmin
from mm2.pipeline.copy_job import CopyJob, free_slots
from mm2.pipeline.session import spark_context
from mm2.runtime.metrics import METRICS

__all__ = [
    "MirrorSourceConnector",
    "MirrorSourceTask",
    "exactly_once",
    "flow_state_dir",
    "spark_conf",
]

log = logging.getLogger(__name__)


def spark_conf(config: Mapping[str, str]) -> dict[str, str]:
    """The `spark.*` keys a flow's connector config passes to the Spark session."""
    return {k: v for k, v in config.items() if k.startswith("spark.")}


def flow_state_dir(config: Mapping[str, str]) -> Path:
    """Where a flow keeps local caches (never a position: those live in Kafka)."""
    base = Path(config.get("mm2.state.dir", "mm2-state"))
    return base / f"{config['source.cluster.alias']}_to_{config['target.cluster.alias']}"


def exactly_once(flow: Flow, read_committed: bool) -> bool:
    """Apache's keys: `exactly.once.source.support` (per flow, top level, or the target's
    `<alias>.exactly.once.source.support`), enabled unless disabled; and the connector's
    `exactly.once.support=required`, which needs a read_committed source consumer."""
    config = flow.connector_config()
    support = config.get(
        "exactly.once.source.support",
        config.get("target.cluster.exactly.once.source.support", "enabled"),
    )
    on = support.strip().lower() != "disabled"
    if config.get("exactly.once.support", "requested").strip().lower() == "required":
        if not on:
            raise ConfigError(
                "exactly.once.support=required, but exactly.once.source.support is disabled",
                key="exactly.once.support",
            )
        if not read_committed:
            raise ConfigError(
                "exactly.once.support=required needs the source consumer's "
                "isolation.level=read_committed",
                key="exactly.once.support",
            )
    return on


class MirrorSourceTask(Task):
    """Keeps the target's topics in step with the source and runs the flow's copy tasks."""

    def start(self, config: Mapping[str, str], context: TaskContext) -> None:
        flow = Flow.for_connector(config)
        self._flow = flow
        self._config = dict(config)
        source_admin = flow.source_admin_config()
        self._sync = TopicSync(
            flow, TopicAdmin(source_admin), TopicAdmin(flow.target_admin_config())
        )
        self._refresh = Every(flow.interval_seconds("refresh.topics") or 2)
        self._configs = Every(flow.interval_seconds("sync.topic.configs"))
        self._acls = Every(flow.interval_seconds("sync.topic.acls"))
        # librdkafka reads committed data unless told otherwise (Java's default is uncommitted):
        # aborted transactions are not mirrored. Lag uses the same bound (the LSO).
        self._consumer = {"isolation.level": "read_committed", **flow.source_consumer_config()}
        self._read_committed = self._consumer["isolation.level"] == "read_committed"
        self._eos = exactly_once(flow, self._read_committed)
        self._ends = OffsetLister(source_admin)
        self._location = PositionsTopic.of(flow)
        self._positions = StoredPositions()
        self._progress = ProgressGroup.for_flow(flow)
        self._group_start: dict[tuple[str, int], int] = {}
        self._routes: dict[str, Route] = {}
        self._tail: PositionsReader | None = None
        self._job: CopyJob | None = None
        self._dealt: list[list[Placed]] = []
        # The running epoch's id and the partitions dealt to its copy tasks since it began
        # (mm2.kafka.copy_assignment), and the producer that tells them.
        self._epoch = ""
        self._added: dict[int, list[Assignment]] = {}
        self._publisher: AssignmentPublisher | None = None
        # Ids to fence before the first epoch: as many as either mirror may have run.
        self._fence_count = flow.tasks_max
        # Earlier copy tasks fenced and positions read since the last epoch began: the next
        # epoch starts on that settle instead of fencing again.
        self._settled = False
        # The first fencing, started before the topic sync so that the two overlap: on a
        # target where no transaction ran yet, the coordinator's first load takes seconds.
        self._fencing: Future[None] | None = None
        self._announced = False
        self._cluster_id = ""
        self._syncs: tuple[str, dict[str, str] | None] = ("", None)
        self._paused = False
        self._copied = 0
        self._last_report = time.monotonic()

    # -- getting ready (network: retried by the runner while a cluster is away) --
    def _prepare(self) -> CopyJob:
        if self._job is not None:
            return self._job
        if self._eos and not self._settled and self._fencing is None:
            pool = ThreadPoolExecutor(1, thread_name_prefix=f"{self._flow.name}|fence")
            self._fencing = pool.submit(self._fence, 30.0)
            pool.shutdown(wait=False)  # the thread ends with the fencing (30 s at most)
        began = time.monotonic()
        # The offsets topic before the remote topics: a broker creating thousands of remote
        # partitions shows a topic created after them seconds later (W3: 10 s of retries).
        self._location.ensure()
        self._cluster_id = self._location.source_cluster_id()
        self._syncs = offset_syncs_target(self._flow)
        # Not read yet: a killed copy task's open transaction holds the topic's end back
        # until the first epoch fences it (mm2.copy.positions_reader reads committed records).
        self._tail = self._tail or self._location.reader()
        ready = time.monotonic()
        self._refresh_routes()  # remote topics are created while Spark starts
        routed = time.monotonic()
        if not self._settled:
            # Fencing and reading the positions need no Spark: done while it starts (in the
            # background since the process started), not after.
            self._settle(timeout=30.0)
            self._settled = True
        log.debug(
            "%s: prepared: internal topics in %.2f s, topics synced in %.2f s, settled in %.2f s",
            self._flow.name, ready - began, routed - ready, time.monotonic() - routed,
        )  # fmt: skip
        sc = spark_context(spark_conf(self._config))
        self._job = CopyJob(sc, self._flow.name)
        self._sc = sc
        return self._job

    def _refresh_routes(self) -> None:
        routes = self._sync.refresh_topics()
        if routes != self._routes:
            self._routes = routes
            METRICS.set_routes(self._flow.source, self._flow.target, routes)

    def _update_lag(self) -> None:
        # Only until the lag monitor (mm2.runtime.lag, every 3 s) has read the flow's partitions:
        # its figures win, and at 10,000 partitions a second ListOffsets every 2 s costs.
        if METRICS.lag_read_from_kafka(self._flow.source, self._flow.target):
            return
        partitions = [(t, p) for t, r in self._routes.items() for p in range(r.partitions)]
        ends = self._ends.offsets(partitions, latest=True, read_committed=self._read_committed)
        METRICS.update_end_offsets(self._flow.source, self._flow.target, ends)

    # -- positions and metrics, from the offsets topic --
    def _apply(self, records: list[PositionRecord]) -> None:
        self._positions.apply(records)
        results = []
        for r in records:
            route = self._routes.get(r.topic)
            if r.offset is None or route is None:
                continue
            s = r.stats
            res = CopyStats(r.topic, r.partition, route.target_topic, position=r.offset)
            if s is not None:
                res = dataclasses.replace(s, target_topic=route.target_topic, position=r.offset)
            if s is not None and s.skipped:
                log.warning(
                    "%s: skipped %d record(s) of %s-%d larger than %s accepts",
                    self._flow.name, s.skipped, r.topic, r.partition, route.target_topic,
                )  # fmt: skip
            results.append(res)
        if results:
            METRICS.record_batch(self._flow.source, self._flow.target, results)
            self._copied += sum(r.records for r in results)
        now = time.monotonic()
        if now - self._last_report >= 30:
            log.info("%s: %d records copied so far", self._flow.name, self._copied)
            self._last_report = now

    # -- epochs --
    def _start_epoch(self, job: CopyJob) -> None:
        slots = free_slots(self._sc, job)
        wanted = self._flow.tasks_max
        dealt = deal(self._routes, min(wanted, max(1, slots)))
        if slots < wanted and len(dealt) < min(wanted, sum(len(d) for d in dealt)):
            log.warning(
                "%s: %d copy task(s) instead of tasks.max=%d: Spark has %d free slot(s)",
                self._flow.name, len(dealt), wanted, slots,
            )  # fmt: skip
        self._dealt = dealt
        owners = {(t, p): n for n, part in enumerate(dealt) for t, p, _ in part}
        METRICS.set_owners(self._flow.source, self._flow.target, owners)
        if not dealt:
            return
        name = self._location.connector
        ids = [self._transactional_id(i) for i in range(len(dealt))]
        if not self._settled:  # else by _prepare or a reassignment, no copy task run since
            self._settle(timeout=30.0)
        self._settled = False
        self._fence_count = len(dealt)
        if not self._announced:
            self._announced = True
            log.info(
                "%s: positions in %s on %s (%d stored), exactly-once %s",
                self._flow.name, self._location.topic, self._flow.target,
                len(self._positions.offsets), "on" if self._eos else "off",
            )  # fmt: skip
        foreign = self._positions.foreign(self._cluster_id)
        if foreign:
            (topic, partition), other = sorted(foreign.items())[0]
            raise ConfigError(
                f"{self._location.topic} on {self._flow.target} holds positions of source "
                f"cluster {other} (e.g. {topic}-{partition}), but {self._flow.source} is "
                f"cluster {self._cluster_id}: refusing to apply them. If {self._flow.source} "
                "really was replaced, stop the connector and DELETE its offsets over REST",
                key="source.cluster.alias",
            )
        if self._progress is not None:  # where partitions without a position start
            self._group_start = self._progress.start_offsets()
        syncs_topic, syncs_producer = self._syncs
        # Where this epoch's added partitions will be published: its copy tasks read from here.
        self._epoch, self._added = uuid.uuid4().hex[:16], {}
        assignments_from = self._publish_additions(self._added)
        specs = [
            CopyTaskSpec(
                flow=self._flow.name,
                task=i,
                connector=name,
                source_alias=self._flow.source,
                source_cluster_id=self._cluster_id,
                source_consumer=self._consumer,
                target_producer=self._flow.target_producer_config(),
                offsets_topic=self._location.topic,
                partitions=[
                    Assignment(t, p, target, self._next_offset(t, p)) for t, p, target in part
                ],
                transactional_id=ids[i] if self._eos else None,
                boundary_ms=self._flow.get_int("transaction.boundary.interval.ms", 100),
                skip_oversized=self._flow.get_bool("skip.oversized.records", False),
                syncs_topic=syncs_topic,
                syncs_producer=syncs_producer,
                offset_lag_max=self._flow.offset_lag_max,
                epoch=self._epoch,
                assignments_from=assignments_from,
                offsets_consumer=dict(self._location.consumer_config),
            )
            for i, part in enumerate(dealt)
        ]
        job.start(specs, self._location)

    def _publish_additions(self, added: Mapping[int, list[Assignment]]) -> int:
        publisher = self._publisher
        if publisher is None:
            publisher = AssignmentPublisher(
                self._location.producer_config, self._location.topic, self._flow.name
            )
            self._publisher = publisher
        return publisher.publish(self._epoch, added)

    def _extend(self, added: dict[int, list[Placed]]) -> None:
        """Give the running copy tasks the partitions that appeared, without a new epoch."""
        if self._progress is not None:
            self._group_start = self._progress.start_offsets()
        grown = {task: list(self._added.get(task, [])) for task in range(len(self._dealt))}
        for task, placed in added.items():
            grown[task].extend(Assignment(t, p, target, self._next_offset(t, p))
                               for t, p, target in placed)  # fmt: skip
        # Published before anything changes here: a failure is tried again at the next poll.
        self._publish_additions({task: rows for task, rows in grown.items() if rows})
        self._added = {task: rows for task, rows in grown.items() if rows}
        dealt = [list(part) for part in self._dealt]
        for task, placed in added.items():
            dealt[task].extend(placed)
        self._dealt = dealt
        owners = {(t, p): n for n, part in enumerate(dealt) for t, p, _ in part}
        METRICS.set_owners(self._flow.source, self._flow.target, owners)
        count = sum(len(placed) for placed in added.values())
        log.info(
            "%s: %d new partition(s) given to the running copy tasks (%s)",
            self._flow.name, count,
            ", ".join(f"task {task}: {len(placed)}" for task, placed in sorted(added.items())),
        )  # fmt: skip

    def _transactional_id(self, task: int) -> str:
        """Connect's `<group.id>-<connector>-<task>`: Apache MM2's own tasks use the same ids,
        so either mirror fences the other's zombies."""
        return f"{self._flow.source}-mm2-{self._location.connector}-{task}"

    def _settle(self, timeout: float, *, rewrite: bool = True) -> None:
        """Fence every earlier copy task, read the committed positions, and write them again.

        The rewrite makes the newest record of each key a committed one: Apache MM2 without
        exactly-once reads its offsets topic uncommitted, and would otherwise resume after a
        position that an aborted transaction (a killed copy task's) wrote.
        """
        began = time.monotonic()
        fencing, self._fencing = self._fencing, None
        if fencing is not None:  # started by _prepare: wait for it (raises its failure)
            fencing.result()  # bounded: each id's fencing times out by itself
        elif self._eos:
            self._fence(timeout)
        fenced = time.monotonic()
        assert self._tail is not None
        self._apply(self._tail.read_to_end(timeout))
        read = time.monotonic()
        if rewrite and self._eos and self._positions.offsets:
            self._location.write(dict(self._positions.offsets), cluster_id=self._cluster_id)
        log.debug(
            "%s: settled: %d id(s) fenced in %.2f s, positions read in %.2f s, written in %.2f s",
            self._flow.name, self._fence_ids() if self._eos else 0, fenced - began, read - fenced,
            time.monotonic() - read,
        )  # fmt: skip

    def _fence_ids(self) -> int:
        # Every id a planner of this flow may have used, this one's or another process's.
        return max(self._fence_count, self._flow.tasks_max)

    def _fence(self, timeout: float) -> None:
        fence_transactional_ids(
            self._flow.target_producer_config(),
            [self._transactional_id(i) for i in range(self._fence_ids())],
            timeout=timeout,
        )

    def _next_offset(self, topic: str, partition: int) -> int:
        stored = self._positions.offsets.get((topic, partition))
        if stored is None:
            return self._group_start.get((topic, partition), -1)
        return stored + 1

    def _assignment_change(self) -> dict[int, list[Placed]] | None:
        """What the running epoch's copy tasks must take on ({}: nothing), or None when the
        assignment changed in a way that needs a new epoch."""
        slots = free_slots(self._sc, self._job) if self._job is not None else 0
        tasks = task_count(self._routes, min(self._flow.tasks_max, max(1, slots)))
        if tasks != len(self._dealt):
            return None
        return extend_deal(self._dealt, self._routes)

    def _check_failure(self, job: CopyJob) -> None:
        failure = job.take_failure()
        if failure is None:
            return
        error = failure.error()
        if error.operator:  # a person must fix it: the task stays FAILED with the cause
            raise error
        # Not retriable: the runner restarts the whole task with backoff and shows it as
        # RESTARTING, so a flow whose copy tasks are down is never reported RUNNING.
        raise KafkaClientError(
            f"{self._flow.name}: copy tasks failed ({failure.kind}: {failure.message})"
        )

    def _step(self, what: str, action: Callable[[], object]) -> None:
        try:
            action()
        except KafkaClientError as exc:
            if not exc.retriable:
                raise
            log.warning("%s: %s failed, trying again later: %s", self._flow.name, what, exc)

    def poll(self) -> float:
        job = self._prepare()
        if not self._paused:  # first: the first epoch waits for no periodic sync
            self._run_epochs(job)
        now = time.monotonic()
        # Each step apart: one cluster being away must not hold up the others' work.
        if self._refresh.due(now):
            self._step("refreshing topics", self._refresh_routes)
            self._step("reading the source's end offsets", self._update_lag)
        if self._configs.due(now):
            self._step("syncing topic configs", self._sync.sync_configs)
        if self._acls.due(now):
            self._step("syncing ACLs", self._sync.sync_acls)
        assert self._tail is not None
        tail = self._tail
        self._step("reading positions", lambda: self._apply(tail.poll(0)))
        if self._progress is not None:
            self._progress.maybe_commit(self._positions.offsets, self._routes.keys(), now)
        return 0.5 if self._paused else 0.2

    def _run_epochs(self, job: CopyJob) -> None:
        """Give the running copy tasks new partitions, or start a new epoch when the
        assignment changed otherwise, when the epoch failed, or when none runs yet."""
        change = self._assignment_change() if job.running else {}
        if change:
            self._step("giving copy tasks new partitions", functools.partial(self._extend, change))
        elif change is None:
            log.info("%s: assignment changed; new copy epoch", self._flow.name)
            began = time.monotonic()
            job.cancel()
            log.debug("%s: copy epoch ended in %.2f s", self._flow.name, time.monotonic() - began)
            # Fenced before the next epoch starts. Between two epochs of a running flow the
            # positions are not written again: that rewrite is for a mirror that reads them
            # uncommitted after a stop (which settles with it), and it cost up to a second of
            # every new topic's wait.
            self._settle(timeout=30.0, rewrite=False)
            self._settled = True
        if not job.running:
            self._check_failure(job)
            self._start_epoch(job)

    def pause(self) -> None:
        self._paused = True
        self._end_epoch()

    def _end_epoch(self, settle_timeout: float = 5.0) -> None:
        """Cancel the copy tasks and fence them at once: a Python worker that Spark has not
        killed yet can then commit nothing more."""
        job = self._job
        if job is None or not job.running:
            return
        job.cancel(timeout=2.0)
        try:
            self._settle(timeout=settle_timeout)
        except KafkaClientError as exc:  # a cluster is away: the next epoch fences first
            log.warning("%s: copy tasks not fenced yet: %s", self._flow.name, exc)

    def resume(self) -> None:
        self._paused = False

    def stop(self) -> None:
        if getattr(self, "_job", None) is not None:
            self._end_epoch(settle_timeout=3.0)  # a clean stop takes at most 10 s
        progress: ProgressGroup | None = getattr(self, "_progress", None)
        if progress is not None:  # as MirrorMaker 1 does at exit
            progress.commit(self._positions.offsets, self._routes.keys())
        tail = getattr(self, "_tail", None)
        if tail is not None:
            tail.close()
        publisher: AssignmentPublisher | None = getattr(self, "_publisher", None)
        if publisher is not None:
            publisher.close()


class MirrorSourceConnector(Connector):
    """One planner task per flow; it runs up to `tasks.max` copy tasks on Spark."""

    task_class = MirrorSourceTask

    def start(self, config: Mapping[str, str]) -> None:
        self._config = dict(config)
        self._flow = Flow.for_connector(config)

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        if not self._flow.enabled:
            return []
        return [{**self._config, "task.index": "0"}]
