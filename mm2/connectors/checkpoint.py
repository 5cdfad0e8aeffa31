"""MirrorCheckpointConnector: consumer-group offsets translated to the target, as checkpoints.

The task reads the flow's offset syncs into an OffsetTranslator (exact between our proven
syncs, Apache's store elsewhere), lists the source's groups every refresh.groups interval
(Apache reconfigures its connector for that; seconds here), writes checkpoints in Apache's
format at emit.checkpoints.interval.seconds, and with sync.group.offsets.enabled commits the
translated offsets to target groups that nobody consumes in; with
sync.share.group.offsets.enabled it sets share groups' start offsets too (mm2.share_groups).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from mm2.client.mirror_client import decode_checkpoints
from mm2.client.syncs import decode_syncs, syncs_location
from mm2.config.model import CHECKPOINT, Flow
from mm2.connect.spi import Task, TaskContext
from mm2.connectors.every import Every
from mm2.connectors.flow_connector import FlowConnector
from mm2.connectors.group_sync import GroupSync
from mm2.errors import ConfigError
from mm2.kafka.first_record import FirstRecordProbe
from mm2.kafka.groups import GroupAdmin
from mm2.kafka.log_reader import LogReader
from mm2.kafka.offsets import OffsetLister
from mm2.kafka.producer import RecordProducer
from mm2.kafka.topics import TopicAdmin
from mm2.offset_syncs.checkpoint_rules import checkpoints_for_group, rename_topic_partition
from mm2.offset_syncs.translator import OffsetTranslator
from mm2.policies.filter import mirrors_group
from mm2.records import Checkpoint, OffsetAndMetadata, TopicPartition
from mm2.runtime.state_file import StateFileError, read_json, write_json
from mm2.share_groups import ShareGroupAdmin, ShareGroupError, ShareGroupSync

__all__ = ["MirrorCheckpointConnector", "MirrorCheckpointTask", "load_snapshot", "snapshot_path"]

log = logging.getLogger(__name__)

_SNAPSHOT_EVERY_S = 30.0
# Each group's committed source offsets.
Commits = Mapping[str, Mapping[TopicPartition, OffsetAndMetadata | None]]


def snapshot_path(config: Mapping[str, str]) -> Path:
    """Where the task of a flow (its resolved connector config) keeps its state."""
    return Flow.for_connector(config).state_dir / "checkpoint-task.json"


def load_snapshot(path: Path) -> tuple[OffsetTranslator, int] | None:
    """The task's saved translator and offset-syncs position; None when there is none.

    A damaged file raises StateFileError naming it (the task stays FAILED, a start exits 2),
    and is left for the operator: it is never overwritten."""
    data = read_json(path)
    if data is None:
        return None
    try:
        translator = OffsetTranslator.from_json(
            data["translator"], initialization_must_read_to_end=False
        )
        return translator, int(data["position"])
    except (ValueError, KeyError, TypeError) as exc:
        raise StateFileError(path, f"holds checkpoint state that cannot be used ({exc})") from None


class MirrorCheckpointTask(Task):
    """Checkpoints for every group that passes the group filter, for the flow's topics."""

    def start(self, config: Mapping[str, str], context: TaskContext) -> None:
        # Nothing that talks to Kafka here: a broker that is not up yet is retried in poll().
        self._flow = flow = Flow.for_connector(config)
        self._metrics, self._liveness = context.metrics, context.liveness
        self._policy = flow.replication_policy()
        self._topic_filter = flow.topic_filter()
        self._group_filter = flow.group_filter()
        self._checkpoints_topic = self._policy.checkpoints_topic(flow.source)
        self._snapshot_path = snapshot_path(config)
        self._ready = False
        self._groups: list[str] = []
        self._committed: tuple[int, Commits] = (0, {})  # the last listing and its time
        self._checkpoints: dict[str, dict[TopicPartition, Checkpoint]] = {}
        settings = flow.settings.checkpoint
        self._refresh = Every(settings.refresh_groups_interval_seconds or 5)
        self._emit = Every(settings.emit_checkpoints_interval_seconds)
        sync_s = settings.sync_group_offsets_interval_seconds
        self._sync_offsets = Every(sync_s, first_after=float(sync_s or 0))
        self._snapshot = Every(int(_SNAPSHOT_EVERY_S), first_after=_SNAPSHOT_EVERY_S)
        self._share_timer = Every(settings.sync_share_group_offsets_interval_seconds)
        self._share: ShareGroupSync | None = None
        self._share_admins: list[ShareGroupAdmin] = []

    # -- setup, retried until the clusters answer --
    def _setup(self) -> None:
        flow = self._flow
        target_admin = flow.target_admin_config(CHECKPOINT, "checkpoints-target-admin")
        TopicAdmin(target_admin).create_compacted_topic(
            self._checkpoints_topic,
            replication_factor=flow.settings.checkpoint.checkpoints_topic_replication_factor,
        )
        self._producer = RecordProducer(
            flow.target_producer_config(CHECKPOINT, "checkpoints-producer")
        )
        self._source_groups = GroupAdmin(
            flow.source_admin_config(CHECKPOINT, "checkpoints-source-admin")
        )
        # Read as the copy tasks read the source (their consumer settings).
        self._first_records = FirstRecordProbe(
            flow.source_consumer_config(label="checkpoints-source-consumer"),
            group=f"mm2-first-record-checkpoints-{flow.source}-{flow.target}",
            timeout=2.0,
        )
        renaming = flow.group_mirroring_policy()
        self._group_sync = GroupSync(
            GroupAdmin(target_admin),
            flow=flow.name,
            target=flow.target,
            rename=lambda group: renaming.target_group(flow.source, group),
        )
        self._load_checkpoints()
        self._translator, start = self._load_snapshot()
        self._syncs = self._sync_reader(start)
        self._read_syncs()
        self._translator.mark_read_to_end()
        if self._share_timer.seconds is not None:
            self._share = self._share_group_sync()
        self._ready = True
        log.info(
            "%s: checkpoints to %s for %d group(s) found in it; offset syncs from %s",
            flow.name,
            self._checkpoints_topic,
            len(self._checkpoints),
            self._syncs.topic,
        )

    def _share_group_sync(self) -> ShareGroupSync | None:
        """The flow's share-group sync, or None (said once) when its clusters' security
        settings are beyond what mm2.share_groups speaks."""
        flow = self._flow
        source_admin = flow.source_admin_config(CHECKPOINT, "share-groups-source-admin")
        try:
            self._share_admins = [
                ShareGroupAdmin(source_admin, name=flow.source),
                ShareGroupAdmin(
                    flow.target_admin_config(CHECKPOINT, "share-groups-target-admin"),
                    name=flow.target,
                ),
            ]
        except ConfigError as exc:
            log.warning("%s: share groups are not synced: %s", flow.name, exc)
            return None
        ends = OffsetLister(source_admin)
        renaming = flow.group_mirroring_policy()
        return ShareGroupSync(
            *self._share_admins,
            flow=flow.name,
            translate=self._downstream,
            rename=self._rename,
            target_group=lambda group: renaming.target_group(flow.source, group),
            mirrors=lambda group: mirrors_group(self._group_filter, group),
            replicates=self._topic_filter.should_replicate_topic,
            stable_ends=lambda tps: ends.offsets(tps, latest=True, read_committed=True),
        )

    def _share_step(self, step: Callable[[], None]) -> None:
        """A share-group refresh or sync; its failure never holds back the consumer groups'
        checkpoints. A cluster without share groups turns the sync off, said once."""
        try:
            step()
        except ShareGroupError as exc:
            log.warning("%s: share groups: %s", self._flow.name, exc)
            if exc.unsupported:
                self._share = None

    def _sync_reader(self, start: int | None) -> LogReader:
        flow = self._flow
        location = syncs_location(flow, connector=CHECKPOINT)
        location.create_topic(flow.settings.checkpoint.offset_syncs_topic_replication_factor)
        consumer, topic = location.consumer_config, location.topic
        reader = LogReader(consumer, topic, start=start)
        if start is not None and start > reader.end_offset():
            log.warning("%s: %s is shorter than the saved state; rereading", flow.name, topic)
            reader.close()
            self._translator = _fresh_translator()
            reader = LogReader(consumer, topic)
        return reader

    def _load_checkpoints(self) -> None:
        """Apache's CheckpointStore: the latest checkpoint per group and partition."""
        consumer = self._flow.target_consumer_config(CHECKPOINT, "checkpoints-target-consumer")
        reader = LogReader(consumer, self._checkpoints_topic)
        try:
            for cp in decode_checkpoints(reader.read_to_end()):
                if mirrors_group(self._group_filter, cp.group_id):
                    self._checkpoints.setdefault(cp.group_id, {})[cp.topic_partition] = cp
        finally:
            reader.close()

    def _load_snapshot(self) -> tuple[OffsetTranslator, int | None]:
        found = load_snapshot(self._snapshot_path)
        return found if found is not None else (_fresh_translator(), None)

    def _save_snapshot(self) -> None:
        state = {"position": self._syncs.position, "translator": self._translator.to_json()}
        write_json(self._snapshot_path, state, indent=None)

    # -- the loop --
    def poll(self) -> float:
        if not self._ready:
            self._setup()
        now = time.monotonic()
        # Up to the end before checkpoints are written; in between, what has arrived.
        emit = self._emit.due(now)
        fresh = self._read_syncs(to_end=emit)
        if self._refresh.due(now):
            self._refresh_groups()
        wrote = False
        if emit:
            stamp = int(time.time() * 1000)  # Apache: the clock before the offsets are listed
            listed = self._source_groups.committed_offsets(self._groups) if self._groups else {}
            self._committed = (stamp, listed)
            wrote = self._emit_checkpoints(stamp, listed)
            self._liveness.checkpoint_pass(self._flow.source, self._flow.target, time.time())
        elif fresh and self._committed[1]:
            # New offset syncs may translate the commits last listed further (a commit ahead
            # of the syncs it needs gets them a moment later): no need to wait a whole interval.
            wrote = self._emit_checkpoints(*self._committed)
        # New checkpoints go to the target groups at once, not at the sync's next turn: a
        # source commit reaches the target group within one emit interval and two round trips.
        if self._sync_offsets.due(now) or (wrote and self._sync_offsets.seconds is not None):
            self._sync_group_offsets()
        if self._share is not None and self._share_timer.due(now):
            self._share_step(self._share.sync)
        if self._snapshot.due(now):
            self._save_snapshot()
        return self._until_next(time.monotonic())

    def _until_next(self, now: float) -> float:
        # Sleep until the earliest timer is due (at most 0.2 s, to read new syncs soon).
        timers = (self._refresh, self._emit, self._sync_offsets, self._snapshot, self._share_timer)
        due = [t.next for t in timers if t.seconds is not None]
        return min(0.2, max(0.02, min(due, default=now + 0.2) - now))

    def _read_syncs(self, *, to_end: bool = True) -> int:
        """Feed the new offset syncs to the translator (up to the end the broker reports, or
        what the consumer has fetched); how many there were."""
        read = 0
        # A batch at a time: a first read can be millions of syncs (architecture.md).
        batches = self._syncs.read_batches() if to_end else iter([self._syncs.read_new()])
        for batch in batches:
            for sync, prev in decode_syncs(batch):
                self._translator.handle(sync, prev)
                read += 1
        return read

    def _refresh_groups(self) -> None:
        groups = [
            g for g in self._source_groups.list_groups() if mirrors_group(self._group_filter, g)
        ]
        added = sorted(set(groups) - set(self._groups))
        if added:
            log.info("%s: consumer groups found: %s", self._flow.name, ", ".join(added))
        # Groups deleted (or expired) on the source leave the checkpoints kept and synced,
        # and the metrics: one-shot groups must not pile up for good.
        gone = sorted(set(self._checkpoints) - set(groups))
        if gone:
            named = ", ".join(gone[:20]) + (", ..." if len(gone) > 20 else "")
            log.info(
                "%s: consumer groups gone from the source, no longer checkpointed: %s",
                self._flow.name,
                named,
            )
            for group in gone:
                del self._checkpoints[group]
            self._metrics.keep_checkpoint_groups(self._flow.source, self._flow.target, groups)
        self._groups = groups
        if self._share is not None:
            self._share_step(self._share.refresh)

    def _downstream(self, tp: TopicPartition, offset: int) -> int | None:
        """Where a commit at `offset` resumes on the target; a commit older than every sync
        kept, through the first record the source holds at or after it."""
        return self._translator.downstream(tp, offset, self._first_record)

    def _first_record(self, tp: TopicPartition, offset: int) -> int | None:
        return self._first_records.first_at_or_after(tp.topic, tp.partition, offset)

    def _rename(self, upstream: TopicPartition) -> TopicPartition:
        return rename_topic_partition(self._policy, self._flow.source, self._flow.target, upstream)

    def _emit_checkpoints(self, stamp: int, committed: Commits) -> bool:
        """Write the checkpoints of these source commits (listed at `stamp`, epoch ms) that
        changed; whether any did."""
        written: dict[str, list[Checkpoint]] = {}
        for group, offsets in committed.items():
            previous = self._checkpoints.get(group, {})
            checkpoints = checkpoints_for_group(
                group,
                offsets,
                translate=self._downstream,
                rename=self._rename,
                previous=previous,
                topic_filter=self._topic_filter.should_replicate_topic,
            )
            for cp in checkpoints:
                self._producer.send_record(self._checkpoints_topic, cp, timestamp=stamp)
            if checkpoints:
                written[group] = checkpoints
        if not written:
            return False
        self._producer.flush()
        done = int(time.time() * 1000)
        for group, checkpoints in written.items():
            store = self._checkpoints.setdefault(group, {})
            for cp in checkpoints:
                store[cp.topic_partition] = cp
            latencies = {(cp.topic, cp.partition): float(done - stamp) for cp in checkpoints}
            self._metrics.record_checkpoints(self._flow.source, self._flow.target, group, latencies)
        log.debug("%s: checkpoints written for %s", self._flow.name, ", ".join(sorted(written)))
        return True

    def _sync_group_offsets(self) -> None:
        self._group_sync.sync(self._checkpoints)

    def stop(self) -> None:
        if getattr(self, "_ready", False):
            try:
                self._save_snapshot()
            except OSError as exc:
                log.warning("%s: could not save %s: %s", self._flow.name, self._snapshot_path, exc)
            self._syncs.close()
            self._producer.close()
            self._first_records.close()
            for admin in self._share_admins:
                admin.close()


def _fresh_translator() -> OffsetTranslator:
    # Apache keeps only the last sync read before the end when it could not load the
    # checkpoints; ours are loaded before this (or setup fails and is retried), so all stay.
    return OffsetTranslator(initialization_must_read_to_end=False)


class MirrorCheckpointConnector(FlowConnector):
    """One task per enabled flow; none when emit.checkpoints is disabled."""

    task_class = MirrorCheckpointTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        emit_s = self._flow.settings.checkpoint.emit_checkpoints_interval_seconds
        return self.one_task(self._flow.enabled and emit_s is not None)
