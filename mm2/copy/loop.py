"""The copy loop: a copy task that stays assigned and streams, one transaction at a time.

It runs inside a Spark task (mm2.copy.task) for as long as its epoch lasts. Each record goes to
the same partition of the remote topic as soon as it arrives; a transaction ends when it is
`transaction.boundary.interval.ms` old (longer under a backlog: mm2.copy.boundary) or the source
has nothing more, with a position per partition it touched. The transaction and a producer's
failure are the sink's (mm2.copy.transaction), judging refused records to mm2.copy.refusals;
after the commit the loop writes offset syncs.

A source topic deleted and created again under the same name is a new topic whose offsets start
at 0 again. librdkafka takes the new topic's id from its next metadata and goes on fetching at
the position it had in the old topic, saying nothing (a FIXME in its rdkafka_topic.c): those
records would be committed under the old topic's position, and copied again once the planner
starts the new topic from its start. So before each commit the loop asks the source for the
ids of the topics it copied records of in the transaction (TopicIds, sent before the flush and
answered while it runs): the request leaves after the last of those records arrived, so the id
the planner dealt means they are that topic's. Another id aborts the transaction, and the
topic's partitions wait, unassigned, for the planner, which sees the new id at its next refresh
and copies the new topic from its start in a new epoch: no record of it is copied twice.

Longer than most modules: the loop's state (what each partition was dealt, its next offset and
leader epoch, the open transaction, the partitions left) is read and changed by every step of a
round; the steps that need none of it are modules of their own (the sink, refusals, markers,
out-of-range, stuck partitions, the schema gate).
"""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import NoReturn, Protocol

from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_INVALID,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    TopicPartition,
)

from mm2.copy.boundary import Boundary, behind
from mm2.copy.consumer import RESET, fetch_pause_ms, source_consumer
from mm2.copy.markers import move_past_markers, past_markers
from mm2.copy.out_of_range import where_to_resume
from mm2.copy.position_record import StoredPositions
from mm2.copy.refusals import Retries, operators_fault, oversized
from mm2.copy.schema_gate import SchemaGate
from mm2.copy.schema_ids import Missing
from mm2.copy.spec import BEGINNING, Assignment, CopyTaskSpec
from mm2.copy.stats import CopyStats
from mm2.copy.stuck import STUCK_S, FetchStates
from mm2.copy.task_offsets import TaskOffsets
from mm2.copy.transaction import AbortableTransactionError, TransactionSink
from mm2.errors import ConfigError, KafkaClientError
from mm2.kafka.failure import (
    AuthAlarm,
    client_error,
    cluster_label,
    ends_a_consumer,
)
from mm2.kafka.take import take
from mm2.kafka.topics import TopicAdmin
from mm2.offset_syncs.emitter import OffsetSyncEmitter
from mm2.offset_syncs.sync_trail import offset_runs
from mm2.records import TP

__all__ = ["CopyLoop", "TopicIds"]

log = logging.getLogger(__name__)

_CONSUME_BATCH = 10_000
_IDLE_COMMIT_MS = 10  # a transaction with nothing more to read now commits once this old
_ROUND_WAIT_S = 0.005  # with a transaction open, a round waits this long for a record
_IDLE_WAIT_S = 0.5  # with no transaction open, a round waits this long for a record
# A transaction of heartbeats alone waits this long for more records (at least the boundary):
# each cluster upstream adds a few heartbeats a second, each at its own moment, and every
# transaction costs a commit on the target and a topic-ids request to the source. Committed
# one by one they were most of an idle mirror's CPU (the bench's W7); a second is the default
# emit.heartbeats.interval.seconds. A record of any other topic ends the wait.
_HEARTBEATS_COMMIT_MS = 1_000
_FLUSH_S = 60  # the longest a transaction's end waits for its records' acknowledgements
_FLUSH_STEP_S = 0.2  # ... looking this often for a refused record that dooms the transaction


class _Pending:
    """One partition's records in the open transaction."""

    __slots__ = ("deliver", "downstream", "epoch", "failures", "stats", "upstream")

    def __init__(self, stats: CopyStats) -> None:
        self.stats = stats
        self.epoch: int | None = None  # the leader epoch of the last record consumed
        self.upstream: list[int] = []
        self.downstream: list[int] = []
        # (upstream offset, error, key + value bytes) of each record the target refused.
        self.failures: list[tuple[int, KafkaError, int, int]] = []
        self.deliver = self.on_delivery

    def on_delivery(self, err: KafkaError | None, msg: Message) -> None:
        if err is None:
            offset = msg.offset()
            self.downstream.append(-1 if offset is None else offset)
        else:
            index = len(self.downstream) + len(self.failures)
            size = len(msg.value() or b"") + len(msg.key() or b"")
            kind, stamp = msg.timestamp()
            self.failures.append((self.upstream[index], err, size, stamp if kind else -1))


class TopicIds(Protocol):
    """The source topics' ids (mm2.kafka.topics.TopicAdmin.ask_topic_ids): the request leaves
    at the call, the answer is waited for by calling what it returns (a topic the source does
    not have is left out; KafkaClientError when there is no answer)."""

    def ask_topic_ids(self, topics: Iterable[str]) -> Callable[[], dict[str, str]]: ...


def _raise(exc: Exception) -> NoReturn:
    raise exc


@dataclass
class _Txn:
    opened: float = 0.0
    parts: dict[TP, _Pending] = field(default_factory=dict)


class CopyLoop:
    """Consumer on the source, the sink on the target, for one copy task's partitions."""

    def __init__(
        self,
        spec: CopyTaskSpec,
        *,
        consumer: Consumer,
        alarm: AuthAlarm,
        sink: TransactionSink,
        syncs: OffsetSyncEmitter,
        offsets: TaskOffsets | None,
        schemas: SchemaGate | None = None,
        topic_ids: TopicIds | None = None,
        fetch_states: FetchStates | None = None,
    ) -> None:
        """Collaborators injected; open() builds the real ones."""
        self.spec = spec
        # Each partition as the planner assigned it (its remote topic, the source topic's id,
        # whether it is copied as it is), and the next offset to copy as of the last commit.
        self._assigned = {(a.topic, a.partition): a for a in spec.partitions}
        self._next = {tp: a.next_offset for tp, a in self._assigned.items()}
        # The leader epoch of the record each committed position follows, where known: the
        # consumer starts there with it, so the source's leader checks its log still holds it.
        self._epochs: dict[TP, int] = {}
        self._skip: set[tuple[str, int, int]] = set()
        reset = spec.settings.source_consumer.get("auto.offset.reset", "earliest")
        self._unpositioned = RESET.get(str(reset).strip().lower(), OFFSET_INVALID)
        self._consumer = consumer
        self._alarm = alarm
        self._sink = sink
        self._syncs = syncs
        self._offsets = offsets
        self._schemas = schemas
        self._topic_ids = topic_ids
        self._fetch_states = fetch_states
        # Partitions of a source topic found deleted and created again (the new topic's id):
        # never assigned again in this epoch; the planner copies the new topic in the next.
        self._left: dict[TP, str] = {}
        self._feed_due = 0.0
        self._txn: _Txn | None = None
        self._running = False
        self._retries = Retries(f"{spec.settings.flow} task {spec.task}")
        self._markers_due = 0.0
        self._boundary = Boundary(spec.settings.transaction_boundary_interval_ms)
        self._behind = False  # the last transaction left a backlog (mm2.copy.boundary)
        # Nothing more to read now means no record for longer than the source broker may hold
        # a fetch while records flow (mm2.copy.consumer), plus a round: records arrive a fetch
        # at a time, and ending a transaction at every pause between fetches cost a commit per
        # fetch at 1,250 records/s a task (six times the interval's).
        self._quiet_s = fetch_pause_ms(spec.settings.source_consumer) / 1000 + _ROUND_WAIT_S
        self._last_record = 0.0

    @classmethod
    def open(cls, spec: CopyTaskSpec) -> CopyLoop:
        """A copy task with real clients; its producer has fenced every earlier holder of its
        transactional id when this returns."""
        alarm = AuthAlarm(cluster_label(spec.settings.source_consumer, spec.settings.source))
        schemas = SchemaGate.open(spec)
        source_admin = spec.settings.source_admin
        states = FetchStates()
        return cls(
            spec,
            consumer=source_consumer(spec, alarm, states),
            alarm=alarm,
            sink=TransactionSink.open(spec),
            syncs=OffsetSyncEmitter(
                spec.syncs_topic, spec.syncs_producer, spec.settings.offset_lag_max
            ),
            offsets=TaskOffsets.open(spec, None if schemas is None else schemas.map),
            schemas=schemas,
            topic_ids=TopicAdmin(source_admin) if source_admin else None,
            fetch_states=states,
        )

    def resume_from(self, committed: StoredPositions) -> list[str]:
        """Start each partition after its committed position (the last offset copied), read
        after this copier's producer fenced every earlier holder of its transactional id:
        whatever such a holder committed after the planner read the positions is not copied
        again. A position stored for another topic of the same name (deleted and re-created)
        does not apply. Returns the partitions moved, as `topic-partition@next`."""
        moved = []
        for tp in committed.offsets:
            assigned = self._assigned.get(tp)
            last = None if assigned is None else committed.of_topic(tp, assigned.topic_id)
            if last is None:
                continue
            epoch = committed.leader_epochs.get(tp)
            if epoch is not None:
                self._epochs[tp] = epoch
            else:
                self._epochs.pop(tp, None)
            if self._next[tp] != last + 1:
                self._next[tp] = last + 1
                moved.append(f"{tp[0]}-{tp[1]}@{last + 1}")
        return moved

    def catch_up_assignment(self, timeout: float = 30.0) -> list[str]:
        """Take every partition the planner has added to this task so far (a task Spark runs
        again finds them before it reads the committed positions); returns them."""
        if self._offsets is None:
            return []
        return self._take(self._offsets.catch_up_assignment(timeout))

    def catch_up_schema_ids(self, timeout: float = 30.0) -> int:
        """Read the flow's whole schema-ID map before copying (0 for a flow without one)."""
        return 0 if self._offsets is None else self._offsets.catch_up_schema_ids(timeout)

    def committed(self, timeout: float = 60.0) -> StoredPositions | None:
        """The positions committed for this task's partitions, read after its producer fenced
        every earlier holder of its id (None: no reader, or a task that copies at least once,
        which starts where its spec says)."""
        if self._offsets is None:
            return None
        if not self.spec.transactional_id:
            self._offsets.resumed()
            return None
        return self._offsets.positions(self._next, timeout)

    def _take(self, added: list[Assignment]) -> list[str]:
        fresh = [a for a in added if (a.topic, a.partition) not in self._assigned]
        for a in fresh:
            self._assigned[(a.topic, a.partition)] = a
            self._next[(a.topic, a.partition)] = a.next_offset
        if fresh and self._running:
            self._consumer.incremental_assign(
                [self._start(a.topic, a.partition, a.next_offset) for a in fresh]
            )
        names = [f"{a.topic}-{a.partition}" for a in fresh]
        if names:
            log.info(
                "%s task %d: takes %s", self.spec.settings.flow, self.spec.task, ", ".join(names)
            )
        return names

    def _record_wait(self, txn: _Txn | None) -> float:
        """How long a round waits for a record when there is none to take at once. The wait
        ends as soon as one arrives: idle, its length only sets how often the loop looks at
        the rest (the feed, stuck partitions, markers, cancellation)."""
        if txn is None:
            return _IDLE_WAIT_S
        if self._heartbeats_only(txn):  # until the heartbeats' transaction is due
            due = txn.opened + self._heartbeats_wait_ms() / 1000
            return min(_IDLE_WAIT_S, max(_ROUND_WAIT_S, due - time.monotonic()))
        return _ROUND_WAIT_S

    def _heartbeats_wait_ms(self) -> float:
        return max(_HEARTBEATS_COMMIT_MS, self._boundary.current_ms)

    def _heartbeats_only(self, txn: _Txn) -> bool:
        assigned = self._assigned
        return bool(txn.parts) and all(
            tp in assigned and assigned[tp].heartbeats for tp in txn.parts
        )

    def _check_clients(self) -> None:
        self._alarm.check()
        self._sink.check()

    # -- the loop --
    def run(self, keep_going: Callable[[], bool] = lambda: True) -> None:
        """Copy until keep_going() turns false (in Spark: the epoch cancelled)."""
        self._assign()
        self._running = True
        gc.disable()  # messages make no reference cycles; the collector only burns CPU here
        try:
            while keep_going():
                self._round()
            self._end_transaction()
        except (KafkaException, SystemError) as exc:  # a produce, poll or flush that raised
            raise self._sink.failure(exc, "copying") from exc
        finally:
            gc.enable()

    def _assign(self) -> None:
        if self._schemas is not None:  # every partition from its last commit, held or not
            self._schemas.forget()
        self._consumer.assign(
            [
                self._start(t, p, n)
                for (t, p), n in sorted(self._next.items())
                if (t, p) not in self._left
            ]
        )

    def _start(self, topic: str, partition: int, next_offset: int) -> TopicPartition:
        if next_offset >= 0:
            epoch = self._epochs.get((topic, partition))
            if epoch is not None:  # validated against the leader's log before the first fetch
                return TopicPartition(topic, partition, next_offset, leader_epoch=epoch)
            return TopicPartition(topic, partition, next_offset)
        start = OFFSET_BEGINNING if next_offset == BEGINNING else self._unpositioned
        return TopicPartition(topic, partition, start)

    def _round(self) -> None:
        wait = self._record_wait(self._txn)
        messages = take(self._consumer, _CONSUME_BATCH, wait)
        if messages:
            self._last_record = time.monotonic()
            try:
                self._copy(messages)
            except KafkaException as exc:
                if self._txn is None or not self._sink.must_abort(exc):
                    raise
                # A record of the open transaction was refused: the flush below says which and
                # why, then the transaction is aborted and copied again (or the task ends).
                self._end_transaction()
        self._sink.poll(0)
        self._check_clients()
        now = time.monotonic()
        if now >= self._feed_due:
            self._feed_due = now + 0.1
            if self._offsets is not None:  # the schema-ID map (in self._schemas) too
                self._take(self._offsets.poll())
            if self._schemas is not None:
                released = [
                    r for r in self._schemas.poll() if (r.topic, r.partition) not in self._left
                ]
                if released:
                    self._consumer.incremental_assign(released)
            self._assign_stuck()
        txn = self._txn
        if txn is not None:
            age_ms = (now - txn.opened) * 1000
            if self._heartbeats_only(txn):
                if age_ms >= self._heartbeats_wait_ms():
                    self._end_transaction()
            elif self._boundary.due(age_ms) or (
                not messages
                and age_ms >= _IDLE_COMMIT_MS
                and now - self._last_record >= self._quiet_s
            ):
                self._end_transaction()
        txn = self._txn
        idle = txn is None or self._heartbeats_only(txn)
        if idle and not messages and now >= self._markers_due:  # past markers, lag 0
            self._markers_due = now + 1.0
            self._move_past_markers(txn)

    def _move_past_markers(self, heartbeats: _Txn | None) -> None:
        """Positions past transaction markers and aborted records, for every partition but
        those of the open transaction of heartbeats, if any: it ends first when another
        partition is to move (heartbeats flow in all the time, so it is seldom closed)."""
        if heartbeats is not None:
            others = {tp: n for tp, n in self._idle_next().items() if tp not in heartbeats.parts}
            if not past_markers(self._consumer, others):
                return
            self._end_transaction()
        moved = move_past_markers(self._consumer, self._sink, self._idle_next(), self._assigned)
        self._next.update(moved)
        for tp in moved:  # the position follows a marker now, of no known epoch
            self._epochs.pop(tp, None)

    def _idle_next(self) -> dict[TP, int]:
        # A partition held at a record whose schema is not mirrored yet is unassigned, and its
        # consumer position may be past that record: it must not move there.
        held = self._schemas.held if self._schemas is not None else {}
        return {tp: n for tp, n in self._next.items() if tp not in held and tp not in self._left}

    def _assign_stuck(self) -> None:
        """Partitions the consumer waits on without fetching (mm2.copy.stuck): the open
        transaction ends first, then each is assigned again from its last commit. A client
        that lost a partition's leader for good ends the task (KafkaClientError)."""
        states = self._fetch_states
        if states is None:
            return
        found = states.stuck()
        lost = states.leaderless()
        if lost:
            self._check_leaders(lost)
        if not found:  # the common case, every round: nothing more to look at
            return
        self._end_transaction()  # may leave partitions of a re-created topic: not assigned again
        held = self._schemas.held if self._schemas is not None else {}
        stuck = {
            tp: state
            for tp, state in found.items()
            if tp in self._next and tp not in self._left and tp not in held
        }
        if not stuck:
            return
        names = ", ".join(f"{t}-{p} ({state})" for (t, p), state in sorted(stuck.items()))
        log.warning(
            "%s task %d: the source consumer stopped fetching %s; assigning again from "
            "the last commit",
            self.spec.settings.flow,
            self.spec.task,
            names,
        )
        self._consumer.incremental_unassign([TopicPartition(t, p) for t, p in stuck])
        self._consumer.incremental_assign([self._start(t, p, self._next[(t, p)]) for t, p in stuck])

    def _check_leaders(self, lost: list[TP]) -> None:
        """Partitions this consumer has known no leader of for a while: when the cluster names
        one, the client's metadata is beyond repair (librdkafka issue 5430, mm2.copy.stuck)
        and the task ends, to start again with new clients; else the source is away."""
        led: dict[TP, int] = {}
        for topic in sorted({t for t, _ in lost}):
            try:
                meta = self._consumer.list_topics(topic, timeout=5.0).topics.get(topic)
            except KafkaException:
                return  # the source does not answer: an outage, nothing to repair
            if meta is None or meta.error is not None:
                continue
            for t, p in lost:
                found = meta.partitions.get(p) if t == topic else None
                if found is not None and found.leader >= 0:
                    led[(t, p)] = found.leader
        if not led:
            log.info(
                "%s task %d: no leader of %s on the source yet",
                self.spec.settings.flow,
                self.spec.task,
                ", ".join(f"{t}-{p}" for t, p in lost),
            )
            return
        names = ", ".join(f"{t}-{p} (broker {b})" for (t, p), b in sorted(led.items()))
        raise KafkaClientError(
            f"{self.spec.settings.flow} task {self.spec.task}: the source consumer has known "
            f"no leader of {names} for {STUCK_S:.0f} s although the source names one (a client "
            "that lost a leader while the broker restarted does not recover, librdkafka issue "
            "5430); the copy task starts again with new clients",
            retriable=True,
        )

    def _copy(self, messages: list[Message]) -> None:
        produce = self._sink.produce
        now_ms = int(time.time() * 1000)
        gate = self._schemas
        assigned = self._assigned
        for msg in messages:
            err = msg.error()
            if err is not None:
                self._on_consume_error(msg, err)
                continue
            topic, partition = msg.topic() or "", msg.partition() or 0
            tp = (topic, partition)
            offset = msg.offset() or 0
            key, value, headers = msg.key(), msg.value(), msg.headers()
            # Partitions copied byte for byte even when the flow rewrites IDs (heartbeats).
            if gate is not None and not assigned[tp].as_is:
                if tp in gate.held:  # the rest of a held partition's batch
                    continue
                out = gate.rewrite(topic, key, value, headers)
                if out is not None:
                    if isinstance(out, Missing):
                        gate.hold(tp, offset, out)
                        self._consumer.incremental_unassign([TopicPartition(topic, partition)])
                        continue
                    key, value, headers = out
            txn = self._txn
            if txn is None:
                txn = self._begin()
            pending = txn.parts.get(tp)
            if pending is None:
                stats = CopyStats(topic, partition, assigned[tp].target_topic, first=offset)
                pending = txn.parts[tp] = _Pending(stats)
            res = pending.stats
            res.position = offset
            pending.epoch = msg.leader_epoch()
            if (topic, partition, offset) in self._skip:
                res.skipped += 1
                continue
            kind, ts = msg.timestamp()
            while True:
                try:
                    produce(
                        res.target_topic,
                        value,
                        key,
                        partition,
                        pending.deliver,
                        timestamp=ts if kind else 0,
                        headers=headers,
                    )
                    break
                except BufferError:
                    self._sink.poll(0.05)
            pending.upstream.append(offset)
            if value is not None:
                res.bytes += len(value)
            if kind:
                if res.min_timestamp < 0 or ts < res.min_timestamp:
                    res.min_timestamp = ts
                res.max_timestamp = max(res.max_timestamp, ts)
                res.sum_timestamp += ts
                age = now_ms - ts
                if res.age_min_ms < 0 or age < res.age_min_ms:
                    res.age_min_ms = age
                res.age_max_ms = max(res.age_max_ms, age)
                res.age_sum_ms += age

    def _on_consume_error(self, msg: Message, err: KafkaError) -> None:
        """Credentials, ACLs and fatal errors end the task; librdkafka retries anything else."""
        where = f"{msg.topic()}-{msg.partition()}"
        if ends_a_consumer(err):
            raise client_error(f"consuming {where}", err, cluster=self._alarm.cluster)
        if err.code() in (KafkaError._AUTO_OFFSET_RESET, KafkaError._LOG_TRUNCATION):
            self._out_of_range((msg.topic() or "", msg.partition() or 0), err)
            return
        log.debug("%s: %s: %s (librdkafka retries)", self.spec.settings.flow, where, err)

    def _out_of_range(self, tp: TP, err: KafkaError) -> None:
        """The source has no record at the offset this task reads next: go on where
        mm2.copy.out_of_range says, and count records deleted before they were copied, or a
        truncated log, in the stats of a position written at once."""
        txn = self._txn
        pending = None if txn is None else txn.parts.get(tp)
        at = pending.stats.position + 1 if pending is not None else self._next.get(tp, -1)
        if at < 0:  # no position, and auto.offset.reset names no start
            raise ConfigError(
                f"{self.spec.settings.flow}: {tp[0]}-{tp[1]} has no position and "
                "auto.offset.reset names no start (earliest or latest): set one, or give the "
                "partition a position (PATCH .../offsets)"
            )
        if self._recreated_now(tp):  # the new topic is shorter than the old one's position
            return
        low, high = self._consumer.get_watermark_offsets(TopicPartition(*tp), 10, False)
        resume = where_to_resume(self.spec.settings.flow, f"{tp[0]}-{tp[1]}", at, err, low, high)
        if resume.gone or resume.truncated:
            txn = self._txn or self._begin()
            pending = txn.parts.get(tp)
            if pending is None:
                stats = CopyStats(tp[0], tp[1], self._assigned[tp].target_topic, first=resume.at)
                pending = txn.parts[tp] = _Pending(stats)
            if resume.truncated:  # copied again from the log start, whatever this one read
                pending.stats.position = resume.at - 1
            else:  # records deleted below the new start: never back behind the position
                pending.stats.position = max(pending.stats.position, resume.at - 1)
            pending.epoch = None  # the position follows no record this task read
            pending.stats.gone += resume.gone
            pending.stats.truncated += resume.truncated
        # The fetcher stopped at the error and a seek does not start it again: assign anew.
        self._consumer.incremental_unassign([TopicPartition(*tp)])
        self._consumer.incremental_assign([TopicPartition(tp[0], tp[1], resume.at)])

    def _begin(self) -> _Txn:
        self._sink.begin()
        self._txn = _Txn(time.monotonic())
        return self._txn

    def _end_transaction(self) -> None:
        """Write positions, flush, commit; on a failed record, abort and copy again.

        In a transaction the positions go out right behind the last records, before the flush:
        the commit makes them visible only with every record acknowledged, and a failure aborts
        them with the records. Without one, they are written once the records are acknowledged.
        """
        txn, self._txn = self._txn, None
        if txn is None:
            return
        ending = time.monotonic()
        sink = self._sink
        asked = self._ask_topic_ids(txn)  # answered while the flush runs
        unwritten: KafkaException | None = None
        if sink.transactional:
            self._finish(txn)
            try:
                self._write_positions(txn)
            except KafkaException as exc:  # e.g. the transaction failed already: abort it
                unwritten = exc
        remaining = self._flush(txn)
        failures = [f for p in txn.parts.values() for f in p.failures]
        if failures and sink.transactional:
            remaining = 0  # held behind a refused record, dropped by the abort, copied again
        if remaining or failures or unwritten is not None:
            if unwritten is not None and not (remaining or failures):
                log.warning(
                    "%s: writing positions failed (%s); copying again",
                    self.spec.settings.flow,
                    unwritten,
                )
            self._give_back(txn, remaining)
            return
        left = len(self._left)
        if not self._same_topics(txn, asked):
            return
        if sink.transactional:
            try:
                sink.commit()
            except AbortableTransactionError as exc:
                log.warning("%s; aborting and copying again from the last commit", exc)
                sink.abort()
                self._assign()
                return
        else:
            self._finish(txn)
            self._write_positions(txn)
            left = sink.flush(60)
            if left:
                raise KafkaClientError(
                    f"{self.spec.settings.flow}: {left} positions not acknowledged", retriable=True
                )
        self._retries.succeeded()
        copied = []
        for (topic, partition), pending in txn.parts.items():
            self._next[(topic, partition)] = pending.stats.position + 1
            if pending.epoch is not None and pending.epoch >= 0:
                self._epochs[(topic, partition)] = pending.epoch
            else:
                self._epochs.pop((topic, partition), None)
            # every record acknowledged: (upstream, downstream, length) runs for offset syncs
            pending.stats.runs = offset_runs(pending.upstream, pending.downstream)
            copied.append(pending.stats)
        self._syncs.emit(copied, wait=False)
        if len(self._left) > left:  # without a transaction: stop reading what was left
            self._assign()
        self._boundary.ended((time.monotonic() - ending) * 1000, self._behind)

    def _flush(self, txn: _Txn) -> int:
        """Wait for every record of `txn` to be acknowledged; how many were not. In a
        transaction, no longer than its first refused record: librdkafka sends nothing more of
        a transaction that must be aborted and holds the records behind the refused one until
        message.timeout.ms (a skipped oversized record stalled the partition for a minute)."""
        deadline = time.monotonic() + _FLUSH_S
        while True:
            left = deadline - time.monotonic()
            remaining = self._sink.flush(max(0.0, min(_FLUSH_STEP_S, left)))
            if not remaining or left <= _FLUSH_STEP_S:
                return remaining
            if self._sink.transactional and any(p.failures for p in txn.parts.values()):
                return remaining

    def _ask_topic_ids(self, txn: _Txn) -> Callable[[], dict[str, str]] | None:
        """Ask the source for the ids of the topics the transaction copied records of, once the
        last of them arrived (None: nothing to ask)."""
        if self._topic_ids is None:
            return None
        topics = {
            tp[0]
            for tp, pending in txn.parts.items()
            if pending.upstream and self._assigned[tp].topic_id and tp not in self._left
        }
        if not topics:
            return None
        try:
            return self._topic_ids.ask_topic_ids(topics)
        except KafkaClientError as exc:  # judged where the answer would be: none
            failed = exc
            return lambda: _raise(failed)

    def _same_topics(self, txn: _Txn, asked: Callable[[], dict[str, str]] | None) -> bool:
        """Whether the transaction's records are all of the topics the planner dealt. A topic
        with another id now was deleted and created again: its partitions are left (_leave),
        and records of left partitions are not committed. With a transaction, it is aborted and
        the other partitions are copied again from the last commit (False); without one, the
        records are on the target already, and only the other partitions' positions are
        written (True). Without an answer from the source nothing is committed: copied again
        after a backoff (False)."""
        try:
            ids = asked() if asked is not None else {}
        except KafkaClientError as exc:
            cause = f"the source topics' ids not read ({exc})"
            if self._sink.transactional:
                self._sink.abort()
            wait = self._retries.failed(cause)  # raises once nothing committed for too long
            self._copy_again_after(cause, wait)
            self._assign()
            return False
        changed = {
            tp[0]: ids[tp[0]]
            for tp in txn.parts
            if tp not in self._left
            and ids.get(tp[0])
            and self._assigned[tp].topic_id
            and ids[tp[0]] != self._assigned[tp].topic_id
        }
        if changed:
            self._leave(changed)
        if not any(tp in self._left and p.upstream for tp, p in txn.parts.items()):
            return True
        if self._sink.transactional:
            self._sink.abort()
            self._assign()
            return False
        for tp in [tp for tp in txn.parts if tp in self._left]:
            del txn.parts[tp]
        return True

    def _recreated_now(self, tp: TP) -> bool:
        """Whether `tp`'s topic has another id now than the one dealt: then its partitions are
        left (_leave) and unassigned at once (False when it cannot be told)."""
        dealt = self._assigned[tp].topic_id
        if self._topic_ids is None or not dealt:
            return False
        if tp not in self._left:
            try:
                now = self._topic_ids.ask_topic_ids([tp[0]])().get(tp[0])
            except KafkaClientError as exc:
                log.debug("%s: the id of %s not read: %s", self.spec.settings.flow, tp[0], exc)
                return False
            if not now or now == dealt:
                return False
            self._leave({tp[0]: now})
        assigned = {(a.topic, a.partition) for a in self._consumer.assignment()}
        self._consumer.incremental_unassign(
            [TopicPartition(*left) for left in self._left if left in assigned]
        )
        return True

    def _leave(self, recreated: Mapping[str, str]) -> None:
        """Stop copying the partitions of topics deleted and created again (topic -> the new
        id): none is assigned again in this epoch, none of their records is committed; the
        planner sees the new id at its next refresh and copies the new topic from its start
        in a new epoch."""
        for topic, new_id in sorted(recreated.items()):
            left = [
                tp for tp, a in self._assigned.items() if tp[0] == topic and a.topic_id != new_id
            ]
            if not left or all(tp in self._left for tp in left):
                continue
            for tp in left:
                self._left[tp] = new_id
            log.info(
                "%s task %d: source topic %s was deleted and created again (topic id %s, "
                "copied as %s): nothing read from it since is committed; the planner copies "
                "the new topic from its start at its next refresh",
                self.spec.settings.flow,
                self.spec.task,
                topic,
                new_id,
                self._assigned[left[0]].topic_id,
            )

    def _finish(self, txn: _Txn) -> None:
        finished = int(time.time() * 1000)
        lag = copied = 0
        for (topic, partition), pending in txn.parts.items():
            pending.stats.records = len(pending.upstream)
            pending.stats.finished_ms = finished
            copied += pending.stats.records
            # From the consumer's last fetch answer: no request (-1001 when it has none yet).
            marks = self._consumer.get_watermark_offsets(
                TopicPartition(topic, partition), cached=True
            )
            if marks is not None and marks[1] > pending.stats.position:
                pending.stats.source_end, pending.stats.source_end_ms = marks[1], finished
                lag += marks[1] - pending.stats.position - 1
        self._behind = behind(lag, copied)

    def _write_positions(self, txn: _Txn) -> None:
        """One position per partition the transaction touched, with what it copied."""
        for pending in txn.parts.values():
            stats = pending.stats
            topic_id = self._assigned[(stats.topic, stats.partition)].topic_id
            self._sink.write_position(stats, topic_id, pending.epoch)

    def _give_back(self, txn: _Txn, remaining: int) -> None:
        """Judge what the target refused (or did not acknowledge), abort, and copy it again.

        A refusal a person must fix (an ACL, a timestamp outside the remote topic's limits, a
        policy, a record larger than the topic accepts) ends the task naming the record and
        the broker's reason; anything else is copied again from the last commit after a
        backoff, until nothing has been committed for a while (mm2.copy.refusals.Retries)."""
        refused = [(p.stats, *failure) for p in txn.parts.values() for failure in p.failures]
        fault = operators_fault(self.spec, refused, self._sink.cluster)
        if fault is not None:
            try:  # leave no transaction open on the target behind the error
                self._sink.abort()
            except KafkaClientError as exc:
                log.info("%s: aborting before the task ends: %s", self.spec.settings.flow, exc)
            raise fault
        skipped = oversized(self.spec, refused)
        self._skip.update(skipped)
        self._sink.abort()
        others = [(s, u, e) for s, u, e, *_ in refused if (s.topic, s.partition, u) not in skipped]
        cause = f"{remaining} records unacknowledged" if remaining else "a failed transaction"
        if others:
            s, up, err = others[0]
            cause = (
                f"producing {s.topic}-{s.partition}@{up} to {s.target_topic} failed ({err.str()})"
            )
        wait = self._retries.failed(cause)  # raises once nothing was committed for too long
        if others or remaining:
            self._copy_again_after(cause, wait)
        self._assign()  # back to the committed positions

    def _copy_again_after(self, cause: str, wait: float) -> None:
        """Say why the records since the last commit are copied again, and wait `wait` s."""
        log.warning(
            "%s: %s; copying again from the last commit in %.1f s",
            self.spec.settings.flow,
            cause,
            wait,
        )
        time.sleep(wait)

    def positions(self) -> Mapping[TP, int]:
        """The next offset to copy of each partition, as of the last commit."""
        return dict(self._next)

    def close(self, timeout: float = 5.0) -> None:
        self._syncs.close(timeout)
        self._sink.close(timeout)
        self._consumer.close()
        if self._offsets is not None:
            self._offsets.close()
