"""The epoch planner: deals a flow's partitions to copy tasks and runs them, one epoch at a time.

An epoch is one run of `n` copy tasks (docs/architecture.md, "The copy path"). Before one
starts, the settle (mm2.connectors.settle) fences every earlier holder of the copy tasks'
transactional ids and reads the committed positions; the task specs (mm2.connectors.task_specs)
say where each partition starts; new partitions join the running tasks through the assignment
feed; anything else that changes the deal starts a new epoch. What runs the copy tasks is a
CopyRunner (Spark's job, or threads in a test); mm2.connectors.source.build_parts makes the
parts.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from mm2.connect.spi import CopyTaskView
from mm2.connectors.deal import Placed, deal, extend_deal, task_count
from mm2.connectors.planner_parts import FlowParts
from mm2.connectors.settle import Settle
from mm2.connectors.task_specs import TaskSpecs
from mm2.connectors.topic_schedule import step
from mm2.copy.runner import CopyRunner
from mm2.copy.spec import LIBRDKAFKA_BATCH_SIZE, Assignment
from mm2.errors import KafkaClientError, ProducerFencedError

__all__ = ["EpochPlanner", "Publisher"]

log = logging.getLogger(__name__)


class Publisher(Protocol):
    """mm2.copy.assignment.AssignmentPublisher."""

    def publish(self, epoch: str, additions: Mapping[int, Sequence[Assignment]]) -> int: ...

    def close(self) -> None: ...


class LazyPublisher:
    """A Publisher made at its first use (no producer for a flow that never adds partitions
    to a running epoch... nor before the first epoch)."""

    def __init__(self, make: Callable[[], Publisher]) -> None:
        self._make = make
        self._publisher: Publisher | None = None

    def publish(self, epoch: str, additions: Mapping[int, Sequence[Assignment]]) -> int:
        if self._publisher is None:
            self._publisher = self._make()
        return self._publisher.publish(epoch, additions)

    def close(self) -> None:
        if self._publisher is not None:
            self._publisher.close()


@dataclass
class Epoch:
    """The running epoch: its id, the partitions dealt to each copy task, the assignments
    added since it began (mm2.copy.assignment), the source topic ids the tasks were given,
    and the largest batch its producers send."""

    id: str = ""
    dealt: list[list[Placed]] = field(default_factory=list)
    added: dict[int, list[Assignment]] = field(default_factory=dict)
    topic_ids: dict[str, str] = field(default_factory=dict)
    batch_bytes: int = LIBRDKAFKA_BATCH_SIZE

    def given(self, assignments: Sequence[Assignment]) -> list[Assignment]:
        for a in assignments:
            self.topic_ids[a.topic] = a.topic_id
        return list(assignments)


class EpochPlanner:
    """Runs a flow's copy epochs over injected parts. `settings` (mm2.config's
    Flow.copy_settings) goes unchanged into every copy task's spec."""

    def __init__(
        self,
        parts: FlowParts,
        *,
        settle: Settle,
        specs: TaskSpecs,
        make_runner: Callable[[], CopyRunner],
        publisher: Publisher,
    ) -> None:
        self.settings = parts.settings
        self._parts = parts
        self._settle = settle
        self._specs = specs
        self._make_runner = make_runner
        self._publisher = publisher
        self._runner: CopyRunner | None = None
        self._epoch = Epoch()

    @property
    def runner(self) -> CopyRunner | None:
        return self._runner

    @property
    def settled(self) -> bool:
        """Earlier copy tasks fenced and positions read since the last epoch began."""
        return self._settle.done

    # -- getting ready (network: retried by the task's runner while a cluster is away) --
    def prepare(self) -> CopyRunner:
        if self._runner is not None:
            return self._runner
        name = self.settings.flow
        self._settle.begin()
        began = time.monotonic()
        # The offsets topic before the remote topics: a broker creating thousands of remote
        # partitions shows a topic created after them seconds later (W3: 10 s of retries).
        # Created now: it may have been lost.
        self._settle.topic_created(self._parts.positions.ensure())
        self._settle.cluster_id = self._parts.positions.source_cluster_id()
        self._specs.prepare()
        self._parts.feed.open()
        ready = time.monotonic()
        self._parts.schedule.refresh_routes()  # remote topics are created while Spark starts
        routed = time.monotonic()
        if not self._settle.done:
            # Fencing and reading the positions need no Spark: done while it starts (in the
            # background since the process started), not after.
            self._settle.run(timeout=30.0)
            self._settle.done = True
        self._settle.rebuild()
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
        elif change is None or (runner.running and self._settle.held_open()):
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
            self._settle.run(timeout=30.0, rewrite=False)
            self._settle.done = True
        if not runner.running:
            self._check_failure(runner)
            self._start_epoch(runner)

    def _start_epoch(self, runner: CopyRunner) -> None:
        s = self.settings
        slots = runner.free_slots()
        dealt = deal(self._parts.schedule.routes, min(s.tasks_max, max(1, slots)))
        if slots < s.tasks_max and len(dealt) < min(s.tasks_max, sum(len(d) for d in dealt)):
            log.warning(
                "%s: %d copy task(s) instead of tasks.max=%d: Spark has %d free slot(s)",
                s.flow,
                len(dealt),
                s.tasks_max,
                slots,
            )
        self._epoch = Epoch(dealt=dealt)
        self._publish_owners()
        if not dealt:
            return
        settle = self._settle
        if not settle.done:  # else by prepare or a reassignment, no copy task run since
            settle.run(timeout=30.0)
        settle.done = False
        settle.fence_count = len(dealt)
        settle.announce_once()
        settle.refuse_foreign()
        self._specs.read_starts()
        limits = self._parts.schedule.max_message_bytes(
            {target for part in dealt for *_, target in part}
        )
        self._epoch.batch_bytes = min([LIBRDKAFKA_BATCH_SIZE, *limits.values()])
        # The epoch's added partitions are published under its id; its empty record replaces
        # the last epoch's, so nothing of that one is read as this one's.
        self._epoch.id = uuid.uuid4().hex[:16]
        self._publisher.publish(self._epoch.id, {})
        specs = self._specs.specs(
            dealt,
            cluster_id=settle.cluster_id,
            ids=[settle.transactional_id(i) for i in range(len(dealt))],
            epoch=self._epoch.id,
            limits=limits,
        )
        for spec in specs:
            self._epoch.given(spec.partitions)
        runner.start(specs, self._parts.positions)

    def copy_tasks(self) -> list[CopyTaskView]:
        """The copy tasks dealt, each with its partitions and why it does not copy yet (None
        once it said it copies in the running epoch, mm2.copy.ready); one placeholder before
        the first epoch; none for a flow with nothing to copy."""
        runner = self._runner
        if not self._epoch.id:
            if runner is not None and not self._parts.schedule.routes:
                return []
            return [
                CopyTaskView(
                    0,
                    "no copy epoch yet: the planner syncs the topics and reads the positions first",
                    (),
                )
            ]
        running = runner is not None and runner.running
        ready = self._parts.feed.ready
        views = []
        for n, part in enumerate(self._epoch.dealt):
            waiting: str | None = None
            if not running:
                waiting = "between two copy epochs: the planner deals the partitions again"
            elif ready.get(n) != self._epoch.id:
                waiting = "starting: not copying yet (Spark launches it, its clients connect)"
            views.append(CopyTaskView(n, waiting, tuple(f"{t}-{p}" for t, p, _ in part)))
        return views

    def _publish_owners(self) -> None:
        owners = {(t, p): n for n, part in enumerate(self._epoch.dealt) for t, p, _ in part}
        self._parts.metrics.set_owners(self.settings.source, self.settings.target, owners)

    def _extend(self, added: dict[int, list[Placed]]) -> None:
        """Give the running copy tasks the partitions that appeared, without a new epoch."""
        epoch = self._epoch
        self._specs.read_starts()
        grown = {task: list(epoch.added.get(task, [])) for task in range(len(epoch.dealt))}
        for task, placed in added.items():
            grown[task].extend(self._specs.assignment(t, p, target) for t, p, target in placed)
        grown = {task: rows for task, rows in grown.items() if rows}
        # Published before anything changes here: a failure is tried again at the next poll.
        self._publisher.publish(epoch.id, grown)
        epoch.added = {task: epoch.given(rows) for task, rows in grown.items()}
        dealt = [list(part) for part in epoch.dealt]
        for task, placed in added.items():
            dealt[task].extend(placed)
        epoch.dealt = dealt
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
        routes = self._parts.schedule.routes
        tasks = task_count(routes, min(self.settings.tasks_max, max(1, runner.free_slots())))
        if tasks != len(self._epoch.dealt):
            return None
        # A topic deleted and re-created between two refreshes: its copy tasks read on at the
        # old topic's offsets; a new epoch starts it from the position of its own (none yet).
        for topic, dealt_id in self._epoch.topic_ids.items():
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
        limits = self._parts.schedule.max_message_bytes(r.target_topic for r in routes.values())
        if min([LIBRDKAFKA_BATCH_SIZE, *limits.values()]) < self._epoch.batch_bytes:
            log.info(
                "%s: a remote topic accepts batches of %d bytes at most; new copy epoch",
                self.settings.flow,
                min(limits.values()),
            )
            return None
        return extend_deal(self._epoch.dealt, routes)

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

    def end_epoch(self, settle_timeout: float = 5.0) -> None:
        """Cancel the copy tasks and fence them at once: a Python worker that Spark has not
        killed yet can then commit nothing more."""
        runner = self._runner
        if runner is None or not runner.running:
            return
        runner.cancel(timeout=2.0)
        try:
            self._settle.run(timeout=settle_timeout, match=False)
        except ProducerFencedError as exc:  # deposed: the new leader fences them
            log.info("%s: copy tasks left to the new leader to fence: %s", self.settings.flow, exc)
        except KafkaClientError as exc:  # a cluster is away: the next epoch fences first
            log.warning("%s: copy tasks not fenced yet: %s", self.settings.flow, exc)

    def close(self) -> None:
        self._publisher.close()
