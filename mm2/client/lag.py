"""How far a flow's target is behind its source, read from Kafka alone.

Per mirrored source partition: the source's log end (the last stable offset when the flow
reads committed data, as it does by default), the mirror's committed position (from the
offsets topic on the target, where the copy tasks commit it), the records between them, and
the age of the oldest record not yet copied (its timestamp, read from the source). Nothing here
asks the pipeline, so the figures stay true while it is paused, failed, restarting or gone.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from mm2.client.open_transactions import OpenTransaction, OpenTransactions
from mm2.config import Flow
from mm2.copy.offsets_reader import OffsetsTopicReader
from mm2.copy.position_record import PositionRecord, StoredPositions
from mm2.copy.positions import PositionsTopic
from mm2.copy.source_ends import SourceEndsWriter
from mm2.errors import KafkaClientError
from mm2.kafka.log_reader import TimestampProbe
from mm2.kafka.offsets import OffsetLister
from mm2.kafka.topics import TopicAdmin
from mm2.policies.filter import should_replicate_topic

__all__ = ["LagReader", "LagReport", "PartitionLag", "mirrored_topic"]

log = logging.getLogger(__name__)

# The oldest uncopied record's timestamp is fetched for this many of the most lagging partitions
# per read, and as many more that have none yet; the others keep the age read last time.
_AGE_PARTITIONS = 256
# How often the target's partitions are checked for a transaction nobody ends.
_OPEN_EVERY_S = 15.0
# The positions consumer is replaced after this many failed reads in a row (_tail_failed).
_REPLACE_TAIL_AFTER = 3


@dataclass(frozen=True)
class PartitionLag:
    """One source partition: `position` is the next offset to copy (None: never copied)."""

    topic: str
    partition: int
    log_end: int
    position: int | None
    records: int
    seconds: float


@dataclass(frozen=True)
class LagReport:
    """A flow's partitions when they were read, and what could not be read then."""

    flow: str
    read_at_ms: int
    partitions: tuple[PartitionLag, ...] = ()
    problems: tuple[str, ...] = ()
    positions_read_at_ms: int = 0
    open_transactions: tuple[OpenTransaction, ...] = ()  # on the target (open_transactions)

    @property
    def records(self) -> int:
        return sum(p.records for p in self.partitions)

    @property
    def seconds(self) -> float:
        return max((p.seconds for p in self.partitions), default=0.0)


@dataclass
class _State:
    topics: dict[str, int] = field(default_factory=dict)
    positions: StoredPositions = field(default_factory=StoredPositions)
    positions_at_ms: int = 0
    ages: dict[tuple[str, int], tuple[int, float]] = field(default_factory=dict)
    topic_ids: dict[str, str] = field(default_factory=dict)
    open_transactions: tuple[OpenTransaction, ...] = ()
    open_checked_at: float = float("-inf")


def mirrored_topic(flow: Flow) -> Callable[[str], bool]:
    """Whether a source topic is one the flow mirrors (its filter, policy and heartbeats)."""
    policy, topic_filter = flow.replication_policy(), flow.topic_filter()
    heartbeats = flow.settings.source.heartbeats_replication_enabled

    def mirrored(topic: str) -> bool:
        return should_replicate_topic(
            topic,
            policy=policy,
            topic_filter=topic_filter,
            target_alias=flow.target,
            heartbeats_replication=heartbeats,
        )

    return mirrored


class LagReader:
    """Reads one flow's lag; keep it and call read() again: it follows the offsets topic.

    With `record_ends` (the running mirror's), each read also writes the source's ends it
    asked for, with the time it asked, to the offsets topic on the target
    (mm2.copy.source_ends), for the recovery point to read with the source gone."""

    def __init__(self, flow: Flow, *, timeout: float = 5.0, record_ends: bool = False) -> None:
        self.flow = flow
        self._timeout = timeout
        consumer = {"isolation.level": "read_committed", **flow.source_consumer_config()}
        self._consumer_config = consumer
        self._read_committed = consumer["isolation.level"] == "read_committed"
        self._policy = flow.replication_policy()
        self._mirrored = mirrored_topic(flow)
        self._admin = TopicAdmin(flow.source_admin_config(label="lag-admin"), timeout=timeout)
        self._lister = OffsetLister(flow.source_admin_config(label="lag-admin"), timeout=timeout)
        self._location = PositionsTopic.of(flow)
        target_admin = flow.target_admin_config(label="lag-admin")
        self._target = TopicAdmin(target_admin, timeout=timeout)
        self._open = OpenTransactions(target_admin, timeout=timeout)
        self._tail: OffsetsTopicReader[PositionRecord] | None = None
        self._tail_failures = 0  # failed reads in a row of the positions consumer
        self._stamps: TimestampProbe | None = None
        self._state = _State()
        self._ends_writer = (
            SourceEndsWriter(self._location.producer_config, self._location.topic, flow.name)
            if record_ends
            else None
        )

    def read(self) -> LagReport:
        """The lag now; what cannot be read (a cluster down) is named in `problems`, and the
        last figures read are used for it (positions) or the partition is left out (ends)."""
        state, problems = self._state, []
        try:
            state.topics = {t: n for t, n in self._admin.list_topics().items() if self._mirrored(t)}
        except KafkaClientError as exc:
            problems.append(f"source {self.flow.source}: {exc}")
        try:
            if self._tail is None:
                self._tail = self._location.reader()
            state.positions.apply(self._tail.read_to_end(self._timeout))
            state.positions_at_ms = int(time.time() * 1000)
            self._tail_failures = 0
        except KafkaClientError as exc:
            problems.append(f"target {self.flow.target}: positions not read: {exc}")
            self._tail_failed()
        partitions = [(t, p) for t, n in sorted(state.topics.items()) for p in range(n)]
        self._read_topic_ids(problems)
        ids = state.topic_ids
        # A position stored for a topic since deleted and created again is not the new topic's:
        # the new one counts as never copied (the planner copies it from its start).
        stored = {tp: state.positions.of_topic(tp, ids.get(tp[0], "")) for tp in partitions}
        ends: dict[tuple[str, int], int] = {}
        starts: dict[tuple[str, int], int] = {}
        try:
            asked_ms = int(time.time() * 1000)
            ends = self._lister.offsets(
                partitions, latest=True, read_committed=self._read_committed
            )
            self._record_ends(asked_ms, partitions, ends)
            never = [tp for tp in partitions if stored[tp] is None]
            if never:
                starts = self._lister.offsets(never, latest=False, read_committed=False)
        except KafkaClientError as exc:
            problems.append(f"source {self.flow.source}: end offsets not read: {exc}")
        rows = []
        for tp in partitions:
            if tp not in ends:
                continue
            last = stored[tp]
            position = None if last is None else last + 1
            if position is not None and position > ends[tp]:
                # Shown, never counted as lag 0: the source log lost records it had (truncated
                # by an unclean leader election, or deleted with the topic in between).
                problems.append(
                    f"{tp[0]}-{tp[1]}: the position {position} is beyond the source's log end "
                    f"{ends[tp]} (the log was truncated, or the topic deleted and created "
                    "again); the copy task copies it again from its log start, counted in "
                    "mm2_source_log_truncations"
                )
            behind = max(0, ends[tp] - (position if position is not None else starts.get(tp, 0)))
            rows.append((tp, ends[tp], position, behind))
        ages = self._ages([(tp, pos, n) for tp, _, pos, n in rows], starts)
        out = tuple(
            PartitionLag(tp[0], tp[1], end, pos, n, ages.get(tp, 0.0) if n else 0.0)
            for tp, end, pos, n in rows
        )
        self._check_open_transactions(problems)
        return LagReport(
            self.flow.name,
            int(time.time() * 1000),
            out,
            tuple(problems),
            state.positions_at_ms,
            state.open_transactions,
        )

    def _record_ends(
        self, asked_ms: int, partitions: list[tuple[str, int]], ends: dict[tuple[str, int], int]
    ) -> None:
        """With `record_ends`: the source's high watermarks, with the time they were asked at,
        to the offsets topic. A read_committed flow's ends are last stable offsets, below the
        records of transactions still open: the high watermarks are asked for once more."""
        if self._ends_writer is None or not ends:
            return
        if self._read_committed:
            try:
                asked_ms = int(time.time() * 1000)
                ends = self._lister.offsets(partitions, latest=True, read_committed=False)
            except KafkaClientError as exc:
                log.debug("%s: the source's high watermarks not read: %s", self.flow.name, exc)
                return
        self._ends_writer.write(asked_ms, ends)

    def _tail_failed(self) -> None:
        """Counts a failed read of the positions; after `_REPLACE_TAIL_AFTER` in a row the next
        read starts a fresh consumer. Replaced it must be, eventually: one whose broker went
        away and came back was seen failing every metadata request for minutes (a flow
        DEGRADED while it copied). But not on every failure: while a target cluster is down
        that built a consumer every few seconds. Reading from the start again only applies
        the same positions again."""
        self._tail_failures += 1
        if self._tail_failures < _REPLACE_TAIL_AFTER:
            return
        self._tail_failures = 0
        if self._tail is not None:
            self._tail.close()
            self._tail = None

    def _check_open_transactions(self, problems: list[str]) -> None:
        """Every `_OPEN_EVERY_S` seconds: the remote topics' and the offsets topic's partitions
        held back by a transaction nobody ends; each is a problem naming the command that ends
        it (the figures found last are kept in between)."""
        state = self._state
        now = time.monotonic()
        if now - state.open_checked_at >= _OPEN_EVERY_S:
            state.open_checked_at = now
            remote = self._policy.format_remote_topic
            wanted = {remote(self.flow.source, t) for t in state.topics} | {self._location.topic}
            try:
                counts = self._target.list_topics()
                partitions = [(t, p) for t in wanted if t in counts for p in range(counts[t])]
                state.open_transactions = tuple(self._open.check(partitions, now=now))
            except KafkaClientError as exc:
                problems.append(f"target {self.flow.target}: open transactions not read: {exc}")
        for o in state.open_transactions:
            problems.append(
                f"target {self.flow.target}: a transaction open for {o.seconds:.0f} s holds "
                f"{o.topic}-{o.partition} back at offset {o.start} (read_committed readers stop "
                f"there); end it with kafka-transactions.sh abort --topic {o.topic} "
                f"--partition {o.partition} --start-offset {o.start} (docs/operations.md)"
            )

    def _read_topic_ids(self, problems: list[str]) -> None:
        """The ids of the mirrored topics whose positions name one (mm2 writes them; Apache MM2
        does not); the ids read last are kept when they cannot be read."""
        state = self._state
        named = {tp[0] for tp in state.positions.topic_ids if tp[0] in state.topics}
        if not named:
            state.topic_ids = {}
            return
        try:
            state.topic_ids = self._admin.topic_ids(named)
        except KafkaClientError as exc:
            problems.append(f"source {self.flow.source}: topic ids not read: {exc}")

    def _ages(
        self,
        rows: list[tuple[tuple[str, int], int | None, int]],
        starts: dict[tuple[str, int], int],
    ) -> dict[tuple[str, int], float]:
        """Seconds since the oldest uncopied record of each lagging partition was written.

        At most _AGE_PARTITIONS partitions are asked a timestamp per read: the most lagging,
        then as many more of those never asked yet. Every other lagging partition keeps the
        age read last time (a record copied since then only makes it older than the truth,
        never 0 while records wait)."""
        now_ms = int(time.time() * 1000)
        lagging = sorted((r for r in rows if r[2] > 0), key=lambda r: -r[2])
        known = self._state.ages
        first = lagging[:_AGE_PARTITIONS]
        turn = [r for r in lagging[_AGE_PARTITIONS:] if r[0] not in known][:_AGE_PARTITIONS]
        wanted = {
            tp: (pos if pos is not None else starts.get(tp, 0)) for tp, pos, _ in first + turn
        }
        fresh = {tp: ts for tp, (offset, ts) in known.items() if wanted.get(tp) == offset}
        todo = {tp: o for tp, o in wanted.items() if tp not in fresh}
        if todo:
            fresh.update(self._first_timestamps(todo))
        still = {tp for tp, _, _ in lagging} - set(wanted)
        kept = {tp: known[tp] for tp in still if tp in known}
        self._state.ages = {tp: (wanted[tp], ts) for tp, ts in fresh.items() if tp in wanted}
        self._state.ages.update(kept)
        stamps = {tp: ts for tp, ts in fresh.items() if tp in wanted}
        stamps.update({tp: ts for tp, (_, ts) in kept.items()})
        return {tp: max(0.0, (now_ms - ts) / 1000) for tp, ts in stamps.items()}

    def _first_timestamps(self, offsets: dict[tuple[str, int], int]) -> dict[tuple[str, int], int]:
        if self._stamps is None:
            self._stamps = TimestampProbe(self._consumer_config, group=f"mm2-lag-{self.flow.name}")
        return self._stamps.timestamps(offsets, timeout=min(2.0, self._timeout))

    def close(self) -> None:
        if self._ends_writer is not None:
            self._ends_writer.close()
        if self._tail is not None:
            self._tail.close()
        if self._stamps is not None:
            self._stamps.close()
