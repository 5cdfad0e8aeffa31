"""A copy task that stays assigned and streams: records and positions, one transaction at a time.

It runs inside a Spark task (mm2.pipeline.copy_job) for as long as its epoch lasts. Each record
goes to the same partition of the remote topic as soon as it arrives; a transaction ends when it
is `boundary_ms` old or the source has nothing more for now, carrying one position per partition
it touched (Connect's offsets topic, mm2.kafka.offset_store). After the commit the task writes
the offset syncs of what it committed. With no transactional id the copy is idempotent and
at-least-once: positions follow the acknowledged records.
"""

from __future__ import annotations

import dataclasses
import gc
import json
import logging
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_END,
    OFFSET_INVALID,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)

from mm2.errors import (
    AuthenticationError,
    KafkaClientError,
    RecordTooLargeError,
)
from mm2.kafka.copy_assignment import Assignment, AssignmentFeed
from mm2.kafka.copy_result import CopyResult, WorkUnit
from mm2.kafka.failure import ClientLog, classify, client_error, cluster_label
from mm2.kafka.offset_store import PARTITIONER, PositionStats, offset_record
from mm2.kafka.sync_emitter import OffsetSyncEmitter
from mm2.offsets.sync_trail import offset_runs

__all__ = [
    "Assignment",
    "CopyTaskSpec",
    "ProducerFencedError",
    "StreamCopier",
    "fence_transactional_ids",
]

log = logging.getLogger(__name__)

TP = tuple[str, int]
_CONSUME_BATCH = 10_000
# A transaction with nothing more to read right now commits once it is this old.
_IDLE_COMMIT_MS = 10
# Where a partition without a position starts, by auto.offset.reset: given to the consumer
# directly, it asks the source for no committed offsets (the copier's group never commits).
_RESET = {
    "earliest": OFFSET_BEGINNING,
    "smallest": OFFSET_BEGINNING,
    "beginning": OFFSET_BEGINNING,
    "latest": OFFSET_END,
    "largest": OFFSET_END,
    "end": OFFSET_END,
}


class ProducerFencedError(KafkaClientError):
    """Another holder of the transactional id took over: this task must end (a zombie)."""


class _AbortableError(KafkaClientError):
    """The transaction cannot commit (a record failed delivery in an outage): abort it and
    copy its records again."""


@dataclass(frozen=True)
class CopyTaskSpec:
    """Everything one copy task needs, as JSON a Spark task can be handed."""

    flow: str
    task: int
    connector: str
    source_alias: str
    source_cluster_id: str
    source_consumer: dict[str, str]
    target_producer: dict[str, str]
    offsets_topic: str
    partitions: list[Assignment]
    transactional_id: str | None = None
    boundary_ms: int = 100
    transaction_timeout_ms: int = 60_000
    skip_oversized: bool = False
    syncs_topic: str = ""
    syncs_producer: dict[str, str] | None = None
    offset_lag_max: int = 100
    # Partitions the planner adds while the epoch runs (mm2.kafka.copy_assignment): the epoch's
    # id, where its records start in the offsets topic, and how to read it (None: never).
    epoch: str = ""
    assignments_from: int = -1
    offsets_consumer: dict[str, str] | None = None

    def to_json(self) -> str:
        # Not dataclasses.asdict: it rebuilds dict subclasses (mm2's ClientConfig) by type.
        raw = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        raw["partitions"] = [dataclasses.astuple(a) for a in self.partitions]
        return json.dumps(raw, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> CopyTaskSpec:
        raw = json.loads(text)
        raw["partitions"] = [Assignment(*a) for a in raw["partitions"]]
        return cls(**raw)


class _Pending:
    """One partition's records in the open transaction."""

    __slots__ = ("deliver", "downstream", "failures", "last", "result", "upstream")

    def __init__(self, unit: WorkUnit) -> None:
        self.result = CopyResult(unit)
        self.upstream: list[int] = []
        self.downstream: list[int] = []
        # (upstream offset, error, key + value bytes) of each record the target refused.
        self.failures: list[tuple[int, KafkaError, int]] = []
        self.last = -1  # last upstream offset consumed (copied or skipped)
        self.deliver = self.on_delivery

    def on_delivery(self, err: KafkaError | None, msg: Message) -> None:
        if err is None:
            offset = msg.offset()
            self.downstream.append(-1 if offset is None else offset)
        else:
            index = len(self.downstream) + len(self.failures)
            size = len(msg.value() or b"") + len(msg.key() or b"")
            self.failures.append((self.upstream[index], err, size))


@dataclass
class _Txn:
    opened: float = 0.0
    parts: dict[TP, _Pending] = field(default_factory=dict)


class StreamCopier:
    """Consumer on the source, producer on the target, for one task's partitions."""

    def __init__(self, spec: CopyTaskSpec) -> None:
        self.spec = spec
        self._routes = {(a.topic, a.partition): a.target_topic for a in spec.partitions}
        self._next = {(a.topic, a.partition): a.next_offset for a in spec.partitions}
        self._skip: set[tuple[str, int, int]] = set()
        self._auth_failure: str | None = None
        source, _, target = spec.flow.partition("->")
        source_label = cluster_label(spec.source_consumer, source)
        target_label = cluster_label(spec.target_producer, target)
        reset = spec.source_consumer.get("auto.offset.reset", "earliest")
        self._unpositioned = _RESET.get(str(reset).strip().lower(), OFFSET_INVALID)
        self._consumer = Consumer(
            {
                "group.id": f"mm2-copier-{spec.flow}",
                "auto.offset.reset": "earliest",
                **spec.source_consumer,
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                "enable.partition.eof": False,
                "error_cb": self._client_error,
                "logger": ClientLog(source_label),
            }
        )
        producer: dict[str, str | int | bool | Callable[[KafkaError], None] | ClientLog] = {
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 5,
            "message.max.bytes": 1_000_000_000,  # the target broker judges record size
            **spec.target_producer,
            **PARTITIONER,
            "error_cb": self._client_error,
            "logger": ClientLog(target_label),
        }
        if spec.skip_oversized:  # only the oversized record may fail, not its batch-mates
            producer.update({"batch.num.messages": 1, "linger.ms": 0})
        if spec.transactional_id:
            producer["transactional.id"] = spec.transactional_id
            producer["transaction.timeout.ms"] = spec.transaction_timeout_ms
        self._producer = Producer(producer)
        self._syncs = OffsetSyncEmitter(spec.syncs_topic, spec.syncs_producer, spec.offset_lag_max)
        self._txn: _Txn | None = None
        self._feed: AssignmentFeed | None = None
        if spec.offsets_consumer is not None and spec.assignments_from >= 0:
            self._feed = AssignmentFeed(
                spec.offsets_consumer, spec.offsets_topic, flow=spec.flow, epoch=spec.epoch,
                task=spec.task, start=spec.assignments_from,
            )  # fmt: skip
        self._feed_due = 0.0
        self._running = False
        if spec.transactional_id:
            self._call(lambda: self._producer.init_transactions(30), "initialising transactions")

    @property
    def next_offsets(self) -> dict[tuple[str, int], int]:
        """Where each partition is read next (-1: by auto.offset.reset)."""
        return dict(self._next)

    def resume_from(self, committed: Mapping[tuple[str, int], int]) -> list[str]:
        """Start each partition after its committed position (the last offset copied), read
        after this copier's producer fenced every earlier holder of its transactional id:
        whatever such a holder committed after the planner read the positions is not copied
        again. Returns the partitions moved, as `topic-partition@next`."""
        moved = []
        for tp, last in committed.items():
            if tp in self._next and self._next[tp] != last + 1:
                self._next[tp] = last + 1
                moved.append(f"{tp[0]}-{tp[1]}@{last + 1}")
        return moved

    def catch_up_assignment(self, timeout: float = 30.0) -> list[str]:
        """Take every partition the planner has added to this task so far (a task Spark runs
        again finds them before it reads the committed positions); returns them."""
        if self._feed is None:
            return []
        return self._take(self._feed.catch_up(timeout))

    def _take(self, added: list[Assignment]) -> list[str]:
        fresh = [a for a in added if (a.topic, a.partition) not in self._routes]
        for a in fresh:
            self._routes[(a.topic, a.partition)] = a.target_topic
            self._next[(a.topic, a.partition)] = a.next_offset
        if fresh and self._running:
            self._consumer.incremental_assign(
                [self._start(a.topic, a.partition, a.next_offset) for a in fresh]
            )
        names = [f"{a.topic}-{a.partition}" for a in fresh]
        if names:
            log.info("%s task %d: takes %s", self.spec.flow, self.spec.task, ", ".join(names))
        return names

    # -- errors --
    def _client_error(self, err: KafkaError) -> None:
        if err.code() in (KafkaError._AUTHENTICATION, KafkaError.SASL_AUTHENTICATION_FAILED):
            self._auth_failure = err.str()

    def _cluster(self, text: str) -> str:
        """`alias (bootstrap servers)` of the cluster an error message is about."""
        source, _, target = self.spec.flow.partition("->")
        producer = self.spec.target_producer.get("bootstrap.servers", "?")
        consumer = self.spec.source_consumer.get("bootstrap.servers", "?")
        if "producer" in text or producer in text:
            return f"{target} ({producer})"
        return f"{source} ({consumer})"

    def _check_clients(self) -> None:
        if self._auth_failure is not None:
            raise AuthenticationError(
                f"authentication failed for {self._cluster(self._auth_failure)}: "
                f"{self._auth_failure}"
            )

    def _call(self, action: Callable[[], object], what: str) -> None:
        """A transactional call, retried while librdkafka says it may succeed later."""
        deadline = time.monotonic() + 60
        while True:
            try:
                action()
                return
            except KafkaException as exc:
                err = exc.args[0] if exc.args else None
                if not isinstance(err, KafkaError):
                    raise
                if err.code() in (KafkaError._FENCED, KafkaError.PRODUCER_FENCED) or (
                    err.fatal() and "fenc" in err.str().lower()
                ):
                    raise ProducerFencedError(
                        f"{self.spec.flow} task {self.spec.task}: {what}: fenced by a newer "
                        f"holder of {self.spec.transactional_id}"
                    ) from exc
                if err.txn_requires_abort():
                    raise _AbortableError(
                        f"{self.spec.flow} task {self.spec.task}: {what}: {err.str()}",
                        retriable=True,
                    ) from exc
                if err.retriable() and time.monotonic() < deadline:
                    self._check_clients()
                    time.sleep(0.1)
                    continue
                raise KafkaClientError(
                    f"{self.spec.flow} task {self.spec.task}: {what} failed: {err.str()}",
                    retriable=not err.fatal(),
                ) from exc

    # -- the loop --
    def run(self, keep_going: Callable[[], bool] = lambda: True) -> None:
        """Copy until keep_going() turns false (in Spark: until the epoch is cancelled)."""
        self._assign()
        self._running = True
        gc.disable()  # messages make no reference cycles; the collector only burns CPU here
        try:
            while keep_going():
                self._round()
            self._end_transaction()
        finally:
            gc.enable()

    def _assign(self) -> None:
        self._consumer.assign([self._start(t, p, n) for (t, p), n in sorted(self._next.items())])

    def _start(self, topic: str, partition: int, next_offset: int) -> TopicPartition:
        return TopicPartition(
            topic, partition, next_offset if next_offset >= 0 else self._unpositioned
        )

    def _round(self) -> None:
        txn = self._txn
        wait = 0.1 if txn is None else 0.005
        messages = self._consumer.consume(_CONSUME_BATCH, 0) or self._consumer.consume(1, wait)
        if messages:
            self._copy(messages)
        self._producer.poll(0)
        self._check_clients()
        now = time.monotonic()
        if self._feed is not None and now >= self._feed_due:
            self._feed_due = now + 0.1
            self._take(self._feed.poll())
        txn = self._txn
        if txn is not None:
            age_ms = (now - txn.opened) * 1000
            if age_ms >= self.spec.boundary_ms or (not messages and age_ms >= _IDLE_COMMIT_MS):
                self._end_transaction()

    def _copy(self, messages: list[Message]) -> None:
        produce = self._producer.produce
        now_ms = int(time.time() * 1000)
        for msg in messages:
            err = msg.error()
            if err is not None:
                self._on_consume_error(msg, err)
                continue
            topic, partition = msg.topic() or "", msg.partition() or 0
            tp = (topic, partition)
            offset = msg.offset() or 0
            txn = self._txn
            if txn is None:
                txn = self._begin()
            pending = txn.parts.get(tp)
            if pending is None:
                unit = WorkUnit(topic, partition, offset, offset, self._routes[tp])
                pending = txn.parts[tp] = _Pending(unit)
            pending.last = offset
            res = pending.result
            if (topic, partition, offset) in self._skip:
                res.skipped += 1
                continue
            value = msg.value()
            kind, ts = msg.timestamp()
            while True:
                try:
                    produce(
                        pending.result.unit.target_topic,
                        value,
                        msg.key(),
                        partition,
                        pending.deliver,
                        timestamp=ts if kind else 0,
                        headers=msg.headers(),
                    )
                    break
                except BufferError:
                    self._producer.poll(0.05)
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
        """Credentials and ACLs end the task (mm2.kafka.failure decides); a fatal error too;
        anything else passes, librdkafka retries it."""
        where = f"{msg.topic()}-{msg.partition()}"
        if classify(err).kind in ("authentication", "authorization") or err.fatal():
            source = cluster_label(self.spec.source_consumer, self.spec.source_alias)
            raise client_error(f"consuming {where}", err, cluster=source)
        log.debug("%s: %s: %s (librdkafka retries)", self.spec.flow, where, err)

    def _begin(self) -> _Txn:
        if self.spec.transactional_id:
            self._call(self._producer.begin_transaction, "beginning a transaction")
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
        transactional = bool(self.spec.transactional_id)
        unwritten: KafkaException | None = None
        results: list[CopyResult] = []
        if transactional:
            results = self._results(txn)
            try:
                self._write_positions(txn, results)
            except KafkaException as exc:  # e.g. the transaction failed already: abort it
                unwritten = exc
        remaining = self._producer.flush(60)
        failures = [f for p in txn.parts.values() for f in p.failures]
        if remaining or failures or unwritten is not None:
            if unwritten is not None and not (remaining or failures):
                log.warning(
                    "%s: writing positions failed (%s); copying again", self.spec.flow, unwritten
                )
            self._give_back(txn, remaining)
            return
        if transactional:
            try:
                self._call(self._producer.commit_transaction, "committing a transaction")
            except _AbortableError as exc:
                log.warning("%s; aborting and copying again from the last commit", exc)
                self._call(lambda: self._producer.abort_transaction(30), "aborting")
                self._assign()
                return
        else:
            results = self._results(txn)
            self._write_positions(txn, results)
            left = self._producer.flush(60)
            if left:
                raise KafkaClientError(
                    f"{self.spec.flow}: {left} positions not acknowledged", retriable=True
                )
        for pending, res in zip(txn.parts.values(), results, strict=True):
            self._next[(res.unit.topic, res.unit.partition)] = pending.last + 1
            res.runs = offset_runs(pending.upstream, pending.downstream)  # all acknowledged
        self._syncs.emit(results, wait=False)

    def _results(self, txn: _Txn) -> list[CopyResult]:
        finished = int(time.time() * 1000)
        return [self._result(p, finished) for p in txn.parts.values()]

    def _write_positions(self, txn: _Txn, results: list[CopyResult]) -> None:
        """One position per partition the transaction touched, with what it copied."""
        for pending, res in zip(txn.parts.values(), results, strict=True):
            unit = res.unit
            key, value, headers = offset_record(
                self.spec.connector, self.spec.source_alias, unit.topic, unit.partition,
                pending.last, cluster_id=self.spec.source_cluster_id,
                stats=PositionStats.of(res, res.finished_ms),
            )  # fmt: skip
            while True:
                try:
                    self._producer.produce(self.spec.offsets_topic, value, key, headers=headers)
                    break
                except BufferError:  # the queue is full of records: let some go first
                    self._producer.poll(0.05)

    def _result(self, pending: _Pending, finished: int) -> CopyResult:
        res = pending.result
        res.records = len(pending.upstream)
        res.finished_ms = finished
        res.unit = dataclasses.replace(
            res.unit,
            start=pending.upstream[0] if pending.upstream else pending.last,
            until=pending.last + 1,
        )
        return res

    def _give_back(self, txn: _Txn, remaining: int) -> None:
        """Abort what the target refused (or did not acknowledge) and read it again."""
        too_large = [
            (p.result.unit, up, size)
            for p in txn.parts.values()
            for up, e, size in p.failures
            if e.code() == KafkaError.MSG_SIZE_TOO_LARGE
        ]
        others = [
            (p.result.unit, up, e)
            for p in txn.parts.values()
            for up, e, _ in p.failures
            if e.code() != KafkaError.MSG_SIZE_TOO_LARGE
        ]
        if too_large and not self.spec.skip_oversized:
            # The broker refuses a whole batch for its largest record: name that one.
            unit, up, size = max(too_large, key=lambda f: f[2])
            raise RecordTooLargeError(
                f"record {unit.topic}-{unit.partition}@{up} ({size} bytes) is larger than "
                f"{unit.target_topic} on the target accepts; raise the target topic's "
                "max.message.bytes, or set skip.oversized.records=true to skip such records "
                "(they are counted and logged)"
            )
        self._skip.update((u.topic, u.partition, up) for u, up, _ in too_large)
        if self.spec.transactional_id:
            self._call(lambda: self._producer.abort_transaction(30), "aborting a transaction")
        if others:
            unit, up, err = others[0]
            log.warning(
                "%s: producing %s-%d@%d to %s failed (%s); copying again from the last commit",
                self.spec.flow, unit.topic, unit.partition, up, unit.target_topic, err.str(),
            )  # fmt: skip
        elif remaining:
            log.warning("%s: %d records unacknowledged; copying again", self.spec.flow, remaining)
        self._assign()  # back to the committed positions

    def positions(self) -> Mapping[TP, int]:
        """The next offset to copy of each partition, as of the last commit."""
        return dict(self._next)

    def close(self, timeout: float = 5.0) -> None:
        self._syncs.close(timeout)
        self._producer.flush(timeout)
        self._consumer.close()
        if self._feed is not None:
            self._feed.close()


def fence_transactional_ids(
    producer_config: Mapping[str, str], ids: list[str], *, timeout: float = 30.0
) -> None:
    """Fence every earlier holder of each id (Connect's fenceZombies): a zombie copy task of
    an old assignment can then never commit again. The ids are fenced side by side: each
    InitProducerId waits while the coordinator aborts the holder's open transaction, and one
    after the other those waits added up to seconds at every new copy epoch."""
    if not ids:
        return
    with ThreadPoolExecutor(max_workers=len(ids), thread_name_prefix="fence") as pool:
        list(pool.map(lambda tid: _fence(producer_config, tid, timeout), ids))  # first failure


def _fence(producer_config: Mapping[str, str], tid: str, timeout: float) -> None:
    producer = Producer(
        {
            **producer_config,
            "logger": ClientLog(cluster_label(producer_config)),
            "transactional.id": tid,
            "enable.idempotence": True,
            "acks": "all",
        }
    )
    try:
        producer.init_transactions(timeout)
    except KafkaException as exc:
        err = exc.args[0] if exc.args else None
        retriable = isinstance(err, KafkaError) and not err.fatal()
        raise KafkaClientError(
            f"fencing earlier copy tasks ({tid}) failed: {exc}", retriable=retriable
        ) from exc
    finally:
        producer.flush(0)
