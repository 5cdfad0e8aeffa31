"""The epoch planner: deals a flow's partitions to copy tasks and runs them, one epoch at a time.

An epoch is one run of `n` copy tasks (docs/architecture.md, "The copy path"). Before one
starts, every earlier holder of the copy tasks' transactional ids is fenced and the committed
positions are read (the settle); new partitions join the running tasks through the assignment
feed; anything else that changes the deal starts a new epoch. What runs the copy tasks is a
CopyRunner (Spark's job, or threads in a test); everything else the planner uses is handed in.

Longer than most modules: the settle, the deal and the epoch's life share the planner's state
(the epoch, its tasks and what they were dealt); taking the settle and the failure checks out
into parts of their own is the next step for this module.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Protocol

from mm2.connect.spi import CopyTaskView, LeaderEpoch
from mm2.connectors.deal import Placed, deal, extend_deal, task_count
from mm2.connectors.left_open import LeftOpenWatch
from mm2.connectors.planner_parts import PlannerFeed, PlannerPositions, PlannerSchedule
from mm2.connectors.topic_schedule import step
from mm2.copy.routes import Route
from mm2.copy.runner import CopyRunner
from mm2.copy.settings import CopySettings
from mm2.copy.spec import BEGINNING, LIBRDKAFKA_BATCH_SIZE, Assignment, CopyTaskSpec
from mm2.errors import ConfigError, KafkaClientError, ProducerFencedError
from mm2.records import TP

__all__ = ["EpochPlanner", "Publisher", "StartOffsets"]

log = logging.getLogger(__name__)


class Publisher(Protocol):
    """mm2.copy.assignment.AssignmentPublisher."""

    def publish(self, epoch: str, additions: Mapping[int, Sequence[Assignment]]) -> int: ...

    def close(self) -> None: ...


class StartOffsets(Protocol):
    """Where partitions without a position start (mm2.connectors.progress_group)."""

    def start_offsets(self) -> dict[TP, int]: ...


class Metrics(Protocol):
    def set_owners(self, source: str, target: str, owners: Mapping[TP, int]) -> None: ...

    def topic_recreated(self, source: str, target: str, topic: str) -> None: ...

    def transactions_ended(self, source: str, target: str, partitions: Sequence[str]) -> None: ...


# (transactional ids, topics, timeout) -> the partitions freed of a transaction left open,
# with the offset each was held at (mm2.copy.fencing.end_left_open)
EndLeftOpen = Callable[[list[str], list[str], float], Mapping[TP, int]]

# (the routes) -> (partitions with an offset sync, positions proven from them and the target)
# (the routes) -> (each synced partition's latest sync's upstream offset: copied, with all
# before it; positions proven from the syncs and the remote topics), mm2.copy.rebuild
Prove = Callable[[Mapping[str, Route]], tuple[dict[TP, int], dict[TP, int]]]


class EpochPlanner:
    """Runs a flow's copy epochs over injected parts. `settings` (mm2.config's
    Flow.copy_settings) goes unchanged into every copy task's spec; `is_heartbeats` is the
    flow's replication policy's isHeartbeatsTopic: with schema IDs rewritten, those topics'
    records are copied as they are (Assignment.as_is)."""

    def __init__(
        self,
        settings: CopySettings,
        *,
        is_heartbeats: Callable[[str], bool] = lambda _topic: False,
        positions: PlannerPositions,
        feed: PlannerFeed,
        schedule: PlannerSchedule,
        make_runner: Callable[[], CopyRunner],
        fence: Callable[[list[str], float], None],
        make_publisher: Callable[[], Publisher],
        syncs_target: Callable[[], tuple[str, dict[str, str] | None]],
        metrics: Metrics,
        start_offsets: StartOffsets | None,
        prove: Prove | None = None,
        leader: Callable[[], LeaderEpoch | None] = lambda: None,
        check_leader: Callable[[LeaderEpoch], None] = lambda _lead: None,
        end_left_open: EndLeftOpen | None = None,
        left_open: LeftOpenWatch | None = None,
    ) -> None:
        self.settings = settings
        self._is_heartbeats = is_heartbeats
        self._positions = positions
        self.feed = feed
        self._schedule = schedule
        self._make_runner = make_runner
        self._fence_ids_with = fence
        self._end_left_open_with = end_left_open
        self._left_open = left_open
        self._make_publisher = make_publisher
        self._syncs_target = syncs_target
        self._metrics = metrics
        self._start_offsets = start_offsets
        self._prove = prove
        self._leader = leader
        self._check_leader = check_leader
        self._created = False  # the offsets topic created by prepare, not rebuilt yet
        self._group_start: dict[TP, int] = {}
        self._runner: CopyRunner | None = None
        self._dealt: list[list[Placed]] = []
        self._dealt_ids: dict[str, str] = {}  # the source topic ids the copy tasks were given
        self._recreated: set[tuple[str, str]] = set()  # (topic, stored id) announced
        self._batch_bytes = LIBRDKAFKA_BATCH_SIZE  # the running epoch's bound (CopyTaskSpec)
        # The running epoch's id and the partitions dealt to its copy tasks since it began
        # (mm2.copy.assignment), and the producer that tells them.
        self._epoch = ""
        self._added: dict[int, list[Assignment]] = {}
        self._publisher: Publisher | None = None
        # Ids to fence before the first epoch: as many as either mirror may have run.
        self._fence_count = settings.tasks_max
        # Earlier copy tasks fenced and positions read since the last epoch began: the next
        # epoch starts on that settle instead of fencing again.
        self.settled = False
        # The first fencing, started before the topic sync so that the two overlap: on a
        # target where no transaction ran yet, the coordinator's first load takes seconds.
        self._fencing: Future[None] | None = None
        self._announced = False
        self._cluster_id = ""
        self._syncs: tuple[str, dict[str, str] | None] = ("", None)

    @property
    def runner(self) -> CopyRunner | None:
        return self._runner

    # -- getting ready (network: retried by the task's runner while a cluster is away) --
    def prepare(self) -> CopyRunner:
        if self._runner is not None:
            return self._runner
        name = self.settings.flow
        if self.settings.exactly_once and not self.settled and self._fencing is None:
            pool = ThreadPoolExecutor(1, thread_name_prefix=f"{name}|fence")
            self._fencing = pool.submit(self._fence, 30.0)
            pool.shutdown(wait=False)  # the thread ends with the fencing (30 s at most)
        began = time.monotonic()
        # The offsets topic before the remote topics: a broker creating thousands of remote
        # partitions shows a topic created after them seconds later (W3: 10 s of retries).
        # Created now: it may have been lost. Kept until the rebuild is done (prepare is tried
        # again while a cluster is away, and the topic exists by then).
        self._created = self._positions.ensure() or self._created
        self._cluster_id = self._positions.source_cluster_id()
        self._syncs = self._syncs_target()
        self.feed.open()
        ready = time.monotonic()
        self._schedule.refresh_routes()  # remote topics are created while Spark starts
        routed = time.monotonic()
        if not self.settled:
            # Fencing and reading the positions need no Spark: done while it starts (in the
            # background since the process started), not after.
            self._settle(timeout=30.0)
            self.settled = True
        if self._created and self._prove is not None:
            self._rebuild(self._prove)
        self._created = False
        log.debug(
            "%s: prepared: internal topics in %.2f s, topics synced in %.2f s, settled in %.2f s",
            name,
            ready - began,
            routed - ready,
            time.monotonic() - routed,
        )
        self._runner = self._make_runner()
        return self._runner

    # -- epochs --
    def run_epochs(self) -> None:
        """Give the running copy tasks new partitions, or start a new epoch when the
        assignment changed otherwise, when the epoch failed, or when none runs yet."""
        runner = self.prepare()
        change = self._assignment_change(runner) if runner.running else {}
        if change:
            step(
                self.settings.flow, "giving copy tasks new partitions", lambda: self._extend(change)
            )
        elif change is None or (runner.running and self._held_open()):
            if change is None:
                log.info("%s: assignment changed; new copy epoch", self.settings.flow)
            began = time.monotonic()
            runner.cancel()
            log.debug(
                "%s: copy epoch ended in %.2f s", self.settings.flow, time.monotonic() - began
            )
            # Fenced before the next epoch starts. Between two epochs of a running flow the
            # positions are not written again: that rewrite is for a mirror that reads them
            # uncommitted after a stop (which settles with it), and it cost up to a second of
            # every new topic's wait.
            self._settle(timeout=30.0, rewrite=False)
            self.settled = True
        if not runner.running:
            self._check_failure(runner)
            self._start_epoch(runner)

    def _start_epoch(self, runner: CopyRunner) -> None:
        s = self.settings
        slots = runner.free_slots()
        routes = self._schedule.routes
        dealt = deal(routes, min(s.tasks_max, max(1, slots)))
        if slots < s.tasks_max and len(dealt) < min(s.tasks_max, sum(len(d) for d in dealt)):
            log.warning(
                "%s: %d copy task(s) instead of tasks.max=%d: Spark has %d free slot(s)",
                s.flow,
                len(dealt),
                s.tasks_max,
                slots,
            )
        self._dealt = dealt
        self._publish_owners()
        if not dealt:
            return
        ids = [self._transactional_id(i) for i in range(len(dealt))]
        if not self.settled:  # else by prepare or a reassignment, no copy task run since
            self._settle(timeout=30.0)
        self.settled = False
        self._fence_count = len(dealt)
        stored = self.feed.stored
        if not self._announced:
            self._announced = True
            log.info(
                "%s: positions in %s on %s (%d stored), exactly-once %s",
                s.flow,
                self._positions.topic,
                s.target,
                len(stored.offsets),
                "on" if s.exactly_once else "off",
            )
        foreign = stored.foreign(self._cluster_id)
        if foreign:
            (topic, partition), other = sorted(foreign.items())[0]
            raise ConfigError(
                f"{self._positions.topic} on {s.target} holds positions of source "
                f"cluster {other} (e.g. {topic}-{partition}), but {s.source} is "
                f"cluster {self._cluster_id}: refusing to apply them. If {s.source} "
                "really was replaced, stop the connector and DELETE its offsets over REST",
                key="source.cluster.alias",
            )
        if self._start_offsets is not None:  # where partitions without a position start
            self._group_start = self._start_offsets.start_offsets()
        syncs_topic, syncs_producer = self._syncs
        limits = self._schedule.max_message_bytes({target for part in dealt for *_, target in part})
        self._batch_bytes = min([LIBRDKAFKA_BATCH_SIZE, *limits.values()])
        # Where this epoch's added partitions will be published: its copy tasks read from here.
        self._epoch, self._added = uuid.uuid4().hex[:16], {}
        assignments_from = self._publish_additions(self._added)
        lead = self._leader()
        specs = [
            CopyTaskSpec(
                settings=s,
                task=i,
                connector=self._positions.connector,
                source_cluster_id=self._cluster_id,
                offsets_topic=self._positions.topic,
                partitions=[self._assignment(t, p, target) for t, p, target in part],
                transactional_id=ids[i] if s.exactly_once else None,
                syncs_topic=syncs_topic,
                syncs_producer=syncs_producer,
                epoch=self._epoch,
                assignments_from=assignments_from,
                offsets_consumer=dict(self._positions.consumer_config),
                topic_limits={target: limits[target] for *_, target in part if target in limits},
                leader_topic=lead.topic if lead is not None else "",
                leader_epoch=lead.epoch if lead is not None else "",
            )
            for i, part in enumerate(dealt)
        ]
        runner.start(specs, self._positions)

    def copy_tasks(self) -> list[CopyTaskView]:
        """The copy tasks dealt, each with its partitions and why it does not copy yet (None
        once it said it copies in the running epoch, mm2.copy.ready); one placeholder before
        the first epoch; none for a flow with nothing to copy."""
        runner = self._runner
        if not self._epoch:
            if runner is not None and not self._schedule.routes:
                return []
            return [
                CopyTaskView(
                    0,
                    "no copy epoch yet: the planner syncs the topics and reads the positions first",
                    (),
                )
            ]
        running = runner is not None and runner.running
        ready = self.feed.ready
        views = []
        for n, part in enumerate(self._dealt):
            waiting: str | None = None
            if not running:
                waiting = "between two copy epochs: the planner deals the partitions again"
            elif ready.get(n) != self._epoch:
                waiting = "starting: not copying yet (Spark launches it, its clients connect)"
            views.append(CopyTaskView(n, waiting, tuple(f"{t}-{p}" for t, p, _ in part)))
        return views

    def _publish_owners(self) -> None:
        owners = {(t, p): n for n, part in enumerate(self._dealt) for t, p, _ in part}
        self._metrics.set_owners(self.settings.source, self.settings.target, owners)

    def _publish_additions(self, added: Mapping[int, list[Assignment]]) -> int:
        if self._publisher is None:
            self._publisher = self._make_publisher()
        return self._publisher.publish(self._epoch, added)

    def _extend(self, added: dict[int, list[Placed]]) -> None:
        """Give the running copy tasks the partitions that appeared, without a new epoch."""
        if self._start_offsets is not None:
            self._group_start = self._start_offsets.start_offsets()
        grown = {task: list(self._added.get(task, [])) for task in range(len(self._dealt))}
        for task, placed in added.items():
            grown[task].extend(self._assignment(t, p, target) for t, p, target in placed)
        # Published before anything changes here: a failure is tried again at the next poll.
        self._publish_additions({task: rows for task, rows in grown.items() if rows})
        self._added = {task: rows for task, rows in grown.items() if rows}
        dealt = [list(part) for part in self._dealt]
        for task, placed in added.items():
            dealt[task].extend(placed)
        self._dealt = dealt
        self._publish_owners()
        count = sum(len(placed) for placed in added.values())
        log.info(
            "%s: %d new partition(s) given to the running copy tasks (%s)",
            self.settings.flow,
            count,
            ", ".join(f"task {task}: {len(placed)}" for task, placed in sorted(added.items())),
        )

    def _assignment_change(self, runner: CopyRunner) -> dict[int, list[Placed]] | None:
        """What the running epoch's copy tasks must take on ({}: nothing), or None when the
        assignment changed in a way that needs a new epoch."""
        routes = self._schedule.routes
        tasks = task_count(routes, min(self.settings.tasks_max, max(1, runner.free_slots())))
        if tasks != len(self._dealt):
            return None
        # A topic deleted and re-created between two refreshes: its copy tasks read on at the
        # old topic's offsets; a new epoch starts it from the position of its own (none yet).
        for topic, dealt_id in self._dealt_ids.items():
            route = routes.get(topic)
            if route is not None and dealt_id and route.topic_id and route.topic_id != dealt_id:
                log.info(
                    "%s: source topic %s has a new topic id; new copy epoch",
                    self.settings.flow,
                    topic,
                )
                return None
        # A remote topic accepting smaller batches than the running producers send (one that
        # joins, or whose max.message.bytes the config sync lowered): new producers, new epoch.
        limits = self._schedule.max_message_bytes(r.target_topic for r in routes.values())
        if min([LIBRDKAFKA_BATCH_SIZE, *limits.values()]) < self._batch_bytes:
            log.info(
                "%s: a remote topic accepts batches of %d bytes at most; new copy epoch",
                self.settings.flow,
                min(limits.values()),
            )
            return None
        return extend_deal(self._dealt, routes)

    def _check_failure(self, runner: CopyRunner) -> None:
        failure = runner.take_failure()
        if failure is None:
            return
        error = failure.error()
        if error.operator:  # a person must fix it: the task stays FAILED with the cause
            raise error
        # Not retriable: the runner restarts the whole task with backoff and shows it as
        # RESTARTING, so a flow whose copy tasks are down is never reported RUNNING.
        raise KafkaClientError(
            f"{self.settings.flow}: copy tasks failed ({failure.kind}: {failure.message})"
        )

    # -- fencing and positions --
    def _transactional_id(self, task: int) -> str:
        """Connect's `<group.id>-<connector>-<task>`: Apache MM2's own tasks use the same ids,
        so either mirror fences the other's zombies."""
        return f"{self.settings.source}-mm2-{self._positions.connector}-{task}"

    def _fence_ids(self) -> int:
        # Every id a planner of this flow may have used, this one's or another process's: one
        # that ran with a larger tasks.max left its copy tasks' notices in the offsets topic.
        used = max(self.feed.ready, default=-1) + 1
        return max(self._fence_count, self.settings.tasks_max, used)

    def _fence(self, timeout: float) -> None:
        # A deposed or paused leader's planner must not fence the new leader's copy tasks.
        lead = self._leader()
        if lead is not None:
            self._check_leader(lead)
        self._fence_ids_with(self._ids(), timeout)

    def _ids(self) -> list[str]:
        return [self._transactional_id(i) for i in range(self._fence_ids())]

    def _written_topics(self) -> list[str]:
        return [self._positions.topic, *(r.target_topic for r in self._schedule.routes.values())]

    def _held_open(self) -> bool:
        """Whether a partition the copy tasks write has been held back by a transaction for
        longer than theirs can last (mm2.connectors.left_open): True starts a new epoch, whose
        settle ends it."""
        if self._left_open is None:
            return False
        held = self._left_open.due(self._written_topics())
        if held:
            log.warning(
                "%s: %s held back by a transaction for longer than the copy tasks' can last; "
                "new copy epoch, which ends what they left open",
                self.settings.flow,
                ", ".join(f"{t}-{p} at offset {at}" for (t, p), at in sorted(held.items())),
            )
        return bool(held)

    def _end_left_open(self, timeout: float) -> bool:
        """After the fencing: end what the fenced copy tasks left open on the offsets topic
        and the remote topics (mm2.copy.fencing), before anything reads or writes there.
        True when something was ended."""
        if self._end_left_open_with is None:
            return False
        ended = self._end_left_open_with(self._ids(), self._written_topics(), timeout)
        if ended:
            s = self.settings
            names = [f"{t}-{p}" for t, p in sorted(ended)]
            self._metrics.transactions_ended(s.source, s.target, names)
        return bool(ended)

    def _catch_up_committed(self, offsets: dict[TP, int]) -> None:
        """After transactions left open were ended aborted: positions behind what the remote
        topics hold committed are moved up to it (mm2.copy.rebuild's proof from the offset
        syncs). A broker that stopped while a commit's markers were written can have committed
        a transaction's records on some partitions and left its positions open on others;
        aborted, those positions would copy the committed records again."""
        if self._prove is None:
            return
        _synced, proven = self._prove(self._schedule.routes)
        ahead = {tp: at for tp, at in proven.items() if tp in offsets and at > offsets[tp]}
        if not ahead:
            return
        moves = ", ".join(
            f"{t}-{p} {offsets[(t, p)]} -> {at}" for (t, p), at in sorted(ahead.items())
        )
        self._write_positions(ahead)
        offsets.update({tp: o for tp, o in self.feed.stored.offsets.items() if tp in offsets})
        log.warning(
            "%s: positions moved up to what the remote topics hold committed: %s (a broker's "
            "stop committed a transaction's records but left its positions open, ended "
            "aborted): those records are not copied again",
            self.settings.flow,
            moves,
        )

    def _write_positions(self, positions: dict[TP, int]) -> None:
        """Positions of routed partitions written with their topic ids, then read back."""
        routes = self._schedule.routes
        ids = {tp: routes[tp[0]].topic_id for tp in positions if routes[tp[0]].topic_id}
        self._positions.write(positions, cluster_id=self._cluster_id, topic_ids=ids)
        self.feed.read_to_end(routes, 30.0)

    def _settle(self, timeout: float, *, rewrite: bool = True) -> None:
        """Fence every earlier copy task, read the committed positions, and write them again.

        The rewrite makes the newest record of each key a committed one: Apache MM2 without
        exactly-once reads its offsets topic uncommitted, and would otherwise resume after a
        position that an aborted transaction (a killed copy task's) wrote.
        """
        began = time.monotonic()
        eos = self.settings.exactly_once
        fencing, self._fencing = self._fencing, None
        if fencing is not None:  # started by prepare: wait for it (raises its failure)
            fencing.result()  # bounded: each id's fencing times out by itself
        elif eos:
            self._fence(timeout)
        ended = eos and self._end_left_open(timeout)
        fenced = time.monotonic()
        before = self._fence_ids()
        self.feed.read_to_end(self._schedule.routes, timeout)
        if eos and self._fence_ids() > before:  # ids of a run with a larger tasks.max
            log.info(
                "%s: copy task ids %d to %d ran before (a larger tasks.max): fenced too",
                self.settings.flow,
                before,
                self._fence_ids() - 1,
            )
            self._fence(timeout)
            ended = self._end_left_open(timeout) or ended
            self.feed.read_to_end(self._schedule.routes, timeout)  # what they committed
        read = time.monotonic()
        # Only the routed partitions' positions: the read waited for the partitions of the
        # offsets topic that hold them, and another's may not be read to its end (an older
        # value written back as the newest would copy records again once it is routed).
        routes = self._schedule.routes
        offsets = {
            tp: o
            for tp, o in self.feed.stored.offsets.items()
            if tp[0] in routes and tp[1] < routes[tp[0]].partitions
        }
        if ended:
            self._catch_up_committed(offsets)
        if rewrite and eos and offsets:
            stored = self.feed.stored
            self._positions.write(
                dict(offsets),
                cluster_id=self._cluster_id,
                topic_ids=stored.topic_ids,
                leader_epochs=stored.leader_epochs,
            )
        log.debug(
            "%s: settled: %d id(s) fenced in %.2f s, positions read in %.2f s, written in %.2f s",
            self.settings.flow,
            self._fence_ids() if eos else 0,
            fenced - began,
            read - fenced,
            time.monotonic() - read,
        )

    def _assignment(self, topic: str, partition: int, target: str) -> Assignment:
        route = self._schedule.routes.get(topic)
        topic_id = route.topic_id if route is not None else ""
        self._dealt_ids[topic] = topic_id
        as_is = self.settings.schema_ids and self._is_heartbeats(topic)
        return Assignment(
            topic, partition, target, self._next_offset(topic, partition, topic_id), topic_id, as_is
        )

    def _next_offset(self, topic: str, partition: int, topic_id: str) -> int:
        tp = (topic, partition)
        start = self.feed.stored.next_offset(tp, topic_id, self._group_start.get(tp, -1))
        was = self.feed.stored.topic_ids.get(tp, "")
        if start == BEGINNING and (topic, was) not in self._recreated:  # announced once
            self._recreated.add((topic, was))
            log.warning(
                "%s: source topic %s was deleted and created again since its positions "
                "were stored (topic id %s, stored for %s): copying it from the start of "
                "its log",
                self.settings.flow,
                topic,
                topic_id,
                was,
            )
            self._metrics.topic_recreated(self.settings.source, self.settings.target, topic)
        return start

    def _rebuild(self, prove: Prove) -> None:
        """The offsets topic was just created: if it was lost, the positions the offset syncs
        and the remote topics prove are written again (mm2.copy.rebuild), instead of copying
        everything again."""
        routes = self._schedule.routes
        synced, proven = prove(routes)
        if not synced:
            return  # a new flow: nothing was copied that an offset sync knows of
        # Unproven although its latest sync's copy is on the target (its copies could not be
        # paired with the source's records): from that sync's record, copied with all before
        # it; the records copied after that come again, none is skipped.
        at_sync = {tp: up for tp, up in synced.items() if tp not in proven}
        self._write_positions({**at_sync, **proven})
        log.warning(
            "%s: %s was missing on %s and was created again: positions of %d partition(s) "
            "rebuilt exactly from the offset syncs and the remote topics; %d more resume after "
            "their latest offset sync (the records copied since it come again); partitions "
            "without an offset sync start where auto.offset.reset says",
            self.settings.flow,
            self._positions.topic,
            self.settings.target,
            len(proven),
            len(at_sync),
        )

    def end_epoch(self, settle_timeout: float = 5.0) -> None:
        """Cancel the copy tasks and fence them at once: a Python worker that Spark has not
        killed yet can then commit nothing more."""
        runner = self._runner
        if runner is None or not runner.running:
            return
        runner.cancel(timeout=2.0)
        try:
            self._settle(timeout=settle_timeout)
        except ProducerFencedError as exc:  # deposed: the new leader fences them
            log.info("%s: copy tasks left to the new leader to fence: %s", self.settings.flow, exc)
        except KafkaClientError as exc:  # a cluster is away: the next epoch fences first
            log.warning("%s: copy tasks not fenced yet: %s", self.settings.flow, exc)

    def close(self) -> None:
        if self._publisher is not None:
            self._publisher.close()
