"""The settle: what happens on the target before a copy epoch starts.

Every earlier holder of the copy tasks' transactional ids is fenced (this planner's earlier
tasks, another process's, Apache MM2's: Connect's ids are the same), what they left open on
the offsets topic and the remote topics is ended, the committed positions are read and, for a
reader that reads uncommitted, written again. A lost offsets topic, created again, is rebuilt
from the offset syncs and the remote topics. docs/architecture.md, "The copy path" and
"Transactions left open", says why each step is there.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import KW_ONLY, dataclass

from mm2.connect.spi import LeaderEpoch
from mm2.connectors.left_open import LeftOpenWatch
from mm2.connectors.planner_parts import FlowParts
from mm2.copy.rebuild import Proof
from mm2.copy.routes import Route
from mm2.errors import ConfigError
from mm2.records import TP

__all__ = ["EndLeftOpen", "Fencing", "Prove", "Settle"]

log = logging.getLogger(__name__)

# (transactional ids, topics, timeout) -> the partitions freed of a transaction left open,
# with the offset each was held at (mm2.copy.fencing.end_left_open)
EndLeftOpen = Callable[[list[str], list[str], float], Mapping[TP, int]]

# (the routes, whether to read the whole offset syncs topic: a rebuild does, a settle reads its
# tail) -> what the offset syncs and the remote topics prove, mm2.copy.rebuild
Prove = Callable[[Mapping[str, Route], bool], Proof]


@dataclass(frozen=True)
class Fencing:
    """How earlier copy tasks are fenced, under the leadership this planner runs in."""

    fence: Callable[[list[str], float], None]
    _: KW_ONLY
    leader: Callable[[], LeaderEpoch | None] = lambda: None
    check_leader: Callable[[LeaderEpoch], None] = lambda _lead: None
    end_left_open: EndLeftOpen | None = None
    left_open: LeftOpenWatch | None = None


class Settle:
    """Fences, ends what was left open, reads and rewrites the positions of a flow's copy tasks
    (`run`), and rebuilds a lost offsets topic (`rebuild`)."""

    def __init__(
        self,
        parts: FlowParts,
        *,
        fencing: Fencing,
        prove: Prove | None = None,
    ) -> None:
        self.settings = parts.settings
        self._parts = parts
        self._fencing = fencing
        self._prove = prove
        # Ids to fence before the first epoch: as many as either mirror may have run; then
        # as many as the running epoch has copy tasks.
        self.fence_count = parts.settings.tasks_max
        # Earlier copy tasks fenced and positions read since the last epoch began: the next
        # epoch starts on that settle instead of fencing again (set by the planner: a settle
        # that ends a paused flow's epoch does not count, the flow settles again on resume).
        self.done = False
        # The first fencing, started before the topic sync so that the two overlap: on a
        # target where no transaction ran yet, the coordinator's first load takes seconds.
        self._first: Future[None] | None = None
        self.cluster_id = ""  # the source cluster's id, read by prepare
        self._created = False  # the offsets topic created now, not rebuilt yet
        self._announced = False

    def begin(self) -> None:
        """Start fencing in the background (the planner's prepare goes on with the rest)."""
        if self.settings.exactly_once and not self.done and self._first is None:
            pool = ThreadPoolExecutor(1, thread_name_prefix=f"{self.settings.flow}|fence")
            self._first = pool.submit(self._fence, 30.0)
            pool.shutdown(wait=False)  # the thread ends with the fencing (30 s at most)

    def topic_created(self, created: bool) -> None:
        """Whether `ensure` created the offsets topic now; kept until the rebuild is done
        (prepare is tried again while a cluster is away, and the topic exists by then)."""
        self._created = created or self._created

    def announce_once(self) -> None:
        """Where the positions are and how many, at the first epoch."""
        if self._announced:
            return
        self._announced = True
        s = self.settings
        log.info(
            "%s: positions in %s on %s (%d stored), exactly-once %s",
            s.flow,
            self._parts.positions.topic,
            s.target,
            len(self._parts.feed.stored.offsets),
            "on" if s.exactly_once else "off",
        )

    def refuse_foreign(self) -> None:
        """ConfigError when the offsets topic holds positions of another source cluster."""
        foreign = self._parts.feed.stored.foreign(self.cluster_id)
        if not foreign:
            return
        s = self.settings
        (topic, partition), other = sorted(foreign.items())[0]
        raise ConfigError(
            f"{self._parts.positions.topic} on {s.target} holds positions of source "
            f"cluster {other} (e.g. {topic}-{partition}), but {s.source} is "
            f"cluster {self.cluster_id}: refusing to apply them. If {s.source} "
            "really was replaced, stop the connector and DELETE its offsets over REST",
            key="source.cluster.alias",
        )

    def transactional_id(self, task: int) -> str:
        """Connect's `<group.id>-<connector>-<task>`: Apache MM2's own tasks use the same ids,
        so either mirror fences the other's zombies."""
        return f"{self.settings.source}-mm2-{self._parts.positions.connector}-{task}"

    def _fence_ids(self) -> int:
        # Every id a planner of this flow may have used, this one's or another process's: one
        # that ran with a larger tasks.max left its copy tasks' notices in the offsets topic.
        used = max(self._parts.feed.ready, default=-1) + 1
        return max(self.fence_count, self.settings.tasks_max, used)

    def _fence(self, timeout: float) -> None:
        # A deposed or paused leader's planner must not fence the new leader's copy tasks.
        lead = self._fencing.leader()
        if lead is not None:
            self._fencing.check_leader(lead)
        self._fencing.fence(self._ids(), timeout)

    def _ids(self) -> list[str]:
        return [self.transactional_id(i) for i in range(self._fence_ids())]

    def _written_topics(self) -> list[str]:
        return [
            self._parts.positions.topic,
            *(r.target_topic for r in self._parts.schedule.routes.values()),
        ]

    def held_open(self) -> bool:
        """Whether a partition the copy tasks write has been held back by a transaction for
        longer than theirs can last (mm2.connectors.left_open): True starts a new epoch, whose
        settle ends it."""
        watch = self._fencing.left_open
        if watch is None:
            return False
        held = watch.due(self._written_topics())
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
        end = self._fencing.end_left_open
        if end is None:
            return False
        ended = end(self._ids(), self._written_topics(), timeout)
        if ended:
            s = self.settings
            names = [f"{t}-{p}" for t, p in sorted(ended)]
            self._parts.metrics.transactions_ended(s.source, s.target, names)
        return bool(ended)

    def _match_committed(self, offsets: dict[TP, int], matched: set[TP]) -> None:
        """After the fencing: positions are moved to what the remote topics hold committed
        (mm2.copy.rebuild's proof from the offset syncs). A broker that stopped while a commit's
        markers were written can have committed a transaction on some of its partitions and left
        it open on others; the open part ends aborted, by end_left_open or, when the copy task
        began its next transaction on those partitions after the broker came back, by the
        fencing's abort of that one.
        - Records committed, positions aborted: the positions are behind, and would copy the
          committed records again. They move up to the last record proven copied.
        - Positions committed, records aborted: the positions are ahead, and the records would
          never be copied. A position moves back only where every committed record of its
          remote partition after the offset sync the walk starts from (the latest of a
          partition's last four whose copy is on the target committed) was paired with the
          source's, to the end: then nothing after the proven record was copied.
        Only the positions of `matched` move: an operator's (REST) position is kept."""
        if self._prove is None:
            return
        proof = self._prove(self._parts.schedule.routes, False)
        moved = {
            tp: at
            for tp, at in proof.proven.items()
            if tp in offsets
            and tp in matched
            and (at > offsets[tp] or (at < offsets[tp] and tp in proof.whole))
        }
        if not moved:
            return
        up = sorted(tp for tp in moved if moved[tp] > offsets[tp])
        back = sorted(tp for tp in moved if moved[tp] < offsets[tp])
        before = dict(offsets)
        self._write_positions(moved)
        offsets.update(
            {tp: o for tp, o in self._parts.feed.stored.offsets.items() if tp in offsets}
        )

        def said(tps: list[TP]) -> str:
            return ", ".join(f"{t}-{p} {before[(t, p)]} -> {moved[(t, p)]}" for t, p in tps)

        if up:
            log.warning(
                "%s: positions moved up to what the remote topics hold committed: %s (a "
                "broker's stop committed a transaction's records but not its positions): those "
                "records are not copied again",
                self.settings.flow,
                said(up),
            )
        if back:
            log.warning(
                "%s: positions moved back to what the remote topics hold committed: %s (a "
                "broker's stop committed a transaction's positions but not its records): those "
                "records are copied again, none is lost",
                self.settings.flow,
                said(back),
            )

    def _write_positions(self, positions: dict[TP, int]) -> None:
        """Positions of routed partitions written with their topic ids, then read back."""
        routes = self._parts.schedule.routes
        ids = {tp: routes[tp[0]].topic_id for tp in positions if routes[tp[0]].topic_id}
        self._parts.positions.write(positions, cluster_id=self.cluster_id, topic_ids=ids)
        self._parts.feed.read_to_end(routes, 30.0)

    def run(self, timeout: float, *, rewrite: bool = True, match: bool = True) -> None:
        """Fence every earlier copy task, read the committed positions, move them to what the
        remote topics hold committed where they differ, and write them again.

        The rewrite makes the newest record of each key a committed one: Apache MM2 without
        exactly-once reads its offsets topic uncommitted, and would otherwise resume after a
        position that an aborted transaction (a killed copy task's) wrote. `match` False
        skips the proof (it reads the offset syncs and the source) unless something left open
        was ended: for a stop or a pause, whose next start settles again.
        """
        began = time.monotonic()
        eos = self.settings.exactly_once
        first, self._first = self._first, None
        if first is not None:  # started by begin: wait for it (raises its failure)
            first.result()  # bounded: each id's fencing times out by itself
        elif eos:
            self._fence(timeout)
        ended = eos and self._end_left_open(timeout)
        fenced = time.monotonic()
        before = self._fence_ids()
        self._parts.feed.read_to_end(self._parts.schedule.routes, timeout)
        if eos and self._fence_ids() > before:  # ids of a run with a larger tasks.max
            log.info(
                "%s: copy task ids %d to %d ran before (a larger tasks.max): fenced too",
                self.settings.flow,
                before,
                self._fence_ids() - 1,
            )
            self._fence(timeout)
            ended = self._end_left_open(timeout) or ended
            self._parts.feed.read_to_end(
                self._parts.schedule.routes, timeout
            )  # what they committed
        read = time.monotonic()
        # Only the routed partitions' positions: the read waited for the partitions of the
        # offsets topic that hold them, and another's may not be read to its end (an older
        # value written back as the newest would copy records again once it is routed).
        routes = self._parts.schedule.routes
        offsets = {
            tp: o
            for tp, o in self._parts.feed.stored.offsets.items()
            if tp[0] in routes and tp[1] < routes[tp[0]].partitions
        }
        # Not for an offsets topic created now: rebuild() proves all of it. Unless something
        # left open was ended, only positions a copy task wrote (they carry the leader epoch of
        # their record; a settle's rewrite keeps it): one set over REST (Connect's PATCH or
        # DELETE of a stopped connector's offsets) is the operator's, to copy from where it says.
        if eos and offsets and not self._created and (ended or match):
            epochs = self._parts.feed.stored.leader_epochs
            self._match_committed(offsets, set(offsets) if ended else set(epochs) & set(offsets))
        if rewrite and eos and offsets:
            stored = self._parts.feed.stored
            self._parts.positions.write(
                dict(offsets),
                cluster_id=self.cluster_id,
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

    def rebuild(self) -> None:
        """The offsets topic was just created: if it was lost, the positions the offset syncs
        and the remote topics prove are written again (mm2.copy.rebuild), instead of copying
        everything again."""
        if self._created and self._prove is not None:
            self._rebuild(self._prove)  # a failure: tried again at the next prepare
        self._created = False

    def _rebuild(self, prove: Prove) -> None:
        proof = prove(self._parts.schedule.routes, True)
        synced, proven = proof.synced, proof.proven
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
            self._parts.positions.topic,
            self.settings.target,
            len(proven),
            len(at_sync),
        )
