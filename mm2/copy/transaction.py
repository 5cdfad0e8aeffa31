"""The target side of a copy task: its producer, its transactions, and what a failure means.

`TransactionSink` owns begin, commit, abort and the fencing of earlier holders of the
transactional id, and it is the one place that maps a producer's Kafka error to what the copy
task does next: fenced (another holder took over; end), abortable (abort and copy again from
the last commit), retriable (try again while librdkafka says it may work), or a failure that
ends the task. Without a transactional id it is an idempotent producer and every transaction
call is a no-op.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from confluent_kafka import KafkaError, KafkaException, Producer

from mm2.copy.position_record import PARTITIONER, position_record
from mm2.copy.spec import LIBRDKAFKA_BATCH_SIZE, TRANSACTION_TIMEOUT_MS, CopyTaskSpec
from mm2.copy.stats import CopyStats
from mm2.errors import AbortableTransactionError, KafkaClientError, ProducerFencedError
from mm2.kafka.failure import (
    AuthAlarm,
    ClientLog,
    cluster_label,
    transaction_outcome,
)
from mm2.kafka.first_requests import learn_brokers

__all__ = [
    "AbortableTransactionError",
    "ProducerFencedError",
    "TransactionSink",
]

log = logging.getLogger(__name__)

Setting = str | int | bool | Callable[[KafkaError], None] | ClientLog

# How long the producer holds a batch for more records (librdkafka's and Java's default: 5 ms).
# A transaction's end sends at once (the flush), so this only spaces the produce requests of a
# steady flow: at 10 ms a task at 1,250 records/s makes half the requests and wakeups, and the
# bench's W2 took about a tenth less CPU per record, for about 2.5 ms more append latency.
LINGER_MS = 10


def producer_settings(spec: CopyTaskSpec) -> dict[str, Setting]:
    """The target producer's librdkafka settings for a copy task."""
    settings: dict[str, Setting] = {
        "enable.idempotence": True,
        "acks": "all",
        "linger.ms": LINGER_MS,
        "message.max.bytes": 1_000_000_000,  # the target broker judges record size
        # A remote topic or offsets topic deleted on the target is never created again by a
        # produce with the broker's defaults (not compacted, one partition): the topic sync
        # and PositionsTopic.ensure create them as they must be.
        "allow.auto.create.topics": False,
        **spec.settings.target_producer,
        **PARTITIONER,
        "logger": ClientLog(cluster_label(spec.settings.target_producer, spec.settings.target)),
    }
    # librdkafka fills a batch up to batch.size and, unlike Java's producer, never splits one the
    # broker refuses: a batch must never be larger than the smallest remote topic accepts.
    asked = int(str(settings.get("batch.size", LIBRDKAFKA_BATCH_SIZE)))
    settings["batch.size"] = min(asked, spec.batch_bytes)
    # With skip.oversized.records only the oversized record may fail, not its batch-mates.
    if spec.settings.skip_oversized_records:
        settings.update({"batch.num.messages": 1, "linger.ms": 0})
    if spec.transactional_id:
        settings["transactional.id"] = spec.transactional_id
        settings["transaction.timeout.ms"] = TRANSACTION_TIMEOUT_MS
    return settings


class TransactionSink:
    """A copy task's producer on the target and its transactions."""

    def __init__(self, spec: CopyTaskSpec, producer: Producer, alarm: AuthAlarm) -> None:
        """`producer` is built from producer_settings(spec) with `alarm` as its error_cb
        (open() does both); with a transactional id its transactions are initialised here,
        which fences every earlier holder of the id."""
        self.spec = spec
        self.transactional = bool(spec.transactional_id)
        self._producer = producer
        self._alarm = alarm
        self.cluster = alarm.cluster
        self.check = alarm.check  # raises the authentication failure the producer reported
        # The hot path calls the producer's own methods, not a wrapper per record.
        self.produce = producer.produce
        self.poll = producer.poll
        if self.transactional:
            learn_brokers(producer, spec.offsets_topic)  # not on a bootstrap connection
            self._call(lambda: producer.init_transactions(30), "initialising transactions")

    @classmethod
    def open(cls, spec: CopyTaskSpec) -> TransactionSink:
        alarm = AuthAlarm(cluster_label(spec.settings.target_producer, spec.settings.target))
        return cls(spec, Producer({**producer_settings(spec), "error_cb": alarm}), alarm)

    def _call(self, action: Callable[[], object], what: str) -> None:
        """A transactional call, retried while librdkafka says it may succeed later."""
        deadline = time.monotonic() + 60
        while True:
            try:
                action()
                return
            except KafkaException as exc:
                err = exc.args[0] if exc.args else None
                retry = isinstance(err, KafkaError) and transaction_outcome(err) == "retriable"
                if retry and time.monotonic() < deadline:
                    self.check()
                    time.sleep(0.1)
                    continue
                raise self.failure(exc, what) from exc

    def must_abort(self, exc: KafkaException) -> bool:
        """Whether a produce failed because the open transaction failed already (the target
        refused one of its records): it must be aborted before anything else is produced."""
        err = exc.args[0] if exc.args else None
        return (
            self.transactional
            and isinstance(err, KafkaError)
            and (err.txn_requires_abort() or err.code() == KafkaError._STATE)
        )

    def failure(self, exc: BaseException, what: str) -> Exception:
        """The typed error for a producer call (`what`) that raised `exc`: fenced, abortable,
        or a Kafka error naming the call. confluent-kafka can raise a fatal error as a
        SystemError from inside a delivery callback; its cause is the KafkaException."""
        if isinstance(exc, SystemError) and isinstance(exc.__cause__, KafkaException):
            exc = exc.__cause__
        err = exc.args[0] if isinstance(exc, KafkaException) and exc.args else None
        if not isinstance(err, KafkaError):
            return exc if isinstance(exc, Exception) else RuntimeError(str(exc))
        where = f"{self.spec.settings.flow} task {self.spec.task}"
        outcome = transaction_outcome(err)
        if outcome == "fenced":
            return ProducerFencedError(
                f"{where}: {what}: fenced by a newer holder of {self.spec.transactional_id}"
            )
        if outcome == "abortable":
            return AbortableTransactionError(f"{where}: {what}: {err.str()}", retriable=True)
        return KafkaClientError(f"{where}: {what} failed: {err.str()}", retriable=not err.fatal())

    # -- transactions --
    def begin(self) -> None:
        if self.transactional:
            self._call(self._producer.begin_transaction, "beginning a transaction")

    def commit(self) -> None:
        """Commit; AbortableTransactionError when the transaction must be aborted instead."""
        if self.transactional:
            self._call(self._producer.commit_transaction, "committing a transaction")

    def abort(self) -> None:
        if self.transactional:
            self._call(lambda: self._producer.abort_transaction(30), "aborting a transaction")

    def flush(self, timeout: float) -> int:
        """Wait for every record to be acknowledged; returns how many were not."""
        return int(self._producer.flush(timeout))

    def write_position(
        self, stats: CopyStats, topic_id: str | None = None, leader_epoch: int | None = None
    ) -> None:
        """The position of one partition (its last offset consumed) with what was copied, and
        the source topic's id and the leader epoch of that record where known."""
        key, value, headers = position_record(
            self.spec.connector,
            self.spec.settings.source,
            stats.topic,
            stats.partition,
            stats.position,
            cluster_id=self.spec.source_cluster_id,
            stats=stats,
            topic_id=topic_id,
            leader_epoch=leader_epoch,
        )
        while True:
            try:
                self._producer.produce(self.spec.offsets_topic, value, key, headers=headers)
                return
            except BufferError:  # the queue is full of records: let some go first
                self._producer.poll(0.05)

    def close(self, timeout: float) -> None:
        """Send what is queued; a producer that failed already (fenced, say) says so here too,
        and that is logged, never raised over the error that ended the task."""
        try:
            self._producer.flush(timeout)
        except (KafkaException, SystemError) as exc:
            log.info(
                "%s task %d: closing the producer: %s",
                self.spec.settings.flow,
                self.spec.task,
                self.failure(exc, "flushing"),
            )
