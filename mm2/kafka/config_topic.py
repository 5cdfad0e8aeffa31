"""mm2's config topic on a target cluster (the leader election over it: mm2.kafka.election).

The topic (`mm2-configs.internal` by default) is compacted with one partition, and holds JSON
records by key: `leader` (the REST URL and worker id of the process that leads the cluster's
flows) and, on the cluster that keeps them, `rest-changes` (what REST changed, see
mm2.runtime.changes).

The leader is elected as Kafka Connect elects its own: every process joins one consumer group
per target cluster (`mm2-leader.<alias>`), subscribed to that one-partition topic; the member
the group assigns partition 0 leads. A process killed -9 leaves the group after
`session.timeout.ms`, and the next rebalance gives the partition to a standby. A leader that
cannot reach the coordinator for a session loses the partition too (librdkafka revokes it), so
two processes never both believe they lead for longer than that; the copy tasks' transactional
ids fence whatever a deposed leader still tries to commit.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)

from mm2.errors import AuthorizationError, KafkaClientError, ProducerFencedError
from mm2.kafka.failure import ClientWatch, client_error, transaction_outcome
from mm2.kafka.first_requests import LOG_START
from mm2.kafka.topics import TopicAdmin

__all__ = ["ConfigTopic", "check_leader_epoch"]

log = logging.getLogger(__name__)

Record = dict[str, Any]
Setting = str | int | float | bool


class ConfigTopic:
    """Reads and writes one cluster's config topic."""

    def __init__(
        self,
        alias: str,
        topic: str,
        *,
        admin_config: Mapping[str, str],
        consumer_config: Mapping[str, str],
        producer_config: Mapping[str, str],
        replication_factor: int = 3,
    ) -> None:
        self.alias = alias
        self.topic = topic
        self._admin = admin_config  # a ClientConfig keeps its alias (named in errors, logs)
        self.consumer_config = dict(consumer_config)
        self._producer_config = dict(producer_config)
        self._replication = replication_factor
        self._producer: Producer | None = None
        self._transactional = True
        self._lock = threading.Lock()

    def ensure(self) -> None:
        """Create the topic (compacted, one partition) unless it exists; with fewer brokers
        than the replication factor, the cluster's default factor is used."""
        admin = TopicAdmin(self._admin)
        try:
            admin.create_compacted_topic(self.topic, replication_factor=self._replication)
        except KafkaClientError as exc:
            if exc.code != "INVALID_REPLICATION_FACTOR":
                raise
            admin.create_compacted_topic(self.topic, replication_factor=-1)

    def ensure_until(self, stopping: threading.Event) -> bool:
        """ensure(), tried again with backoff (1 s doubling to 30 s) while the cluster does not
        answer; False if `stopping` was set first."""
        wait = 1.0
        while not stopping.is_set():
            try:
                self.ensure()
                return True
            except KafkaClientError as exc:
                log.warning(
                    "config topic %s on %s: %s; trying again in %.0f s",
                    self.topic,
                    self.alias,
                    exc,
                    wait,
                )
                stopping.wait(wait)
                wait = min(30.0, wait * 2)
        return False

    @property
    def transactional_id(self) -> str:
        """The writers' id: only a leader writes, and a new leader's first write fences the
        writes of the one it replaced."""
        return f"mm2-leader.{self.alias}.{self.topic}"

    def _writer(self, timeout: float) -> Producer:
        """The producer (under the lock): transactional, or idempotent where the cluster does
        not let this principal use transactions (then a deposed leader is not fenced here)."""
        if self._producer is not None:
            return self._producer
        settings: dict[str, Setting] = {
            **self._producer_config,
            "enable.idempotence": True,
            "acks": "all",
        }
        if self._transactional:
            tx = {**settings, "transactional.id": self.transactional_id}
            producer = Producer(ClientWatch(tx, alias=self.alias).settings())
            try:
                producer.init_transactions(timeout)
                self._producer = producer
                return producer
            except KafkaException as exc:
                error = client_error(
                    f"starting transactions on {self.topic}", exc, cluster=self.alias
                )
                if not isinstance(error, AuthorizationError):
                    raise error from exc
                log.warning("%s; leader records written without transactions", error)
                self._transactional = False
        self._producer = Producer(ClientWatch(settings, alias=self.alias).settings())
        return self._producer

    def write(self, key: str, value: Record | None, *, timeout: float = 30.0) -> None:
        """Produce one record (None: a tombstone) and wait until the cluster has it.

        ProducerFencedError when another process took over the writes (it leads now)."""
        failures: list[KafkaError] = []

        def delivered(err: KafkaError | None, _msg: object) -> None:
            if err is not None:
                failures.append(err)

        body = None if value is None else json.dumps(value, sort_keys=True).encode()
        what = f"writing {key} to {self.topic}"
        with self._lock:
            producer = self._writer(timeout)
            transactional = self._transactional
            try:
                if transactional:
                    producer.begin_transaction()
                producer.produce(self.topic, body, key.encode(), partition=0, on_delivery=delivered)
                if transactional:
                    producer.commit_transaction(timeout)
                left = producer.flush(timeout)
            except KafkaException as exc:
                raise self._failed(producer, what, exc) from exc
        if failures:
            raise client_error(what, failures[0], cluster=self.alias)
        if left:
            raise KafkaClientError(
                f"{what} on {self.alias}: not acknowledged within {timeout:.0f} s",
                retriable=True,
            )

    def _failed(self, producer: Producer, what: str, exc: KafkaException) -> KafkaClientError:
        """The error of a failed transactional write, the producer left usable or dropped."""
        error = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
        outcome = "fatal" if error is None else transaction_outcome(error)
        if outcome == "fenced":
            self._producer = None
            return ProducerFencedError(
                f"{what} on {self.alias}: another process leads {self.alias} now"
            )
        if outcome == "abortable":
            try:
                producer.abort_transaction(10.0)
            except KafkaException:
                self._producer = None
        elif outcome == "fatal":
            self._producer = None
        return client_error(what, exc, cluster=self.alias)

    def follow(
        self,
        on_record: Callable[[str, Record | None], None],
        stopping: threading.Event,
        on_end: Callable[[], None] = lambda: None,
    ) -> threading.Thread:
        """Call `on_record(key, value)` for every record from the start of the topic and for
        every record written later, on a thread of its own, until `stopping` is set; `on_end`
        once the records there were at the start have been read."""
        thread = threading.Thread(
            target=self._follow,
            args=(on_record, stopping, on_end),
            name=f"config-{self.alias}",
            daemon=True,
        )
        thread.start()
        return thread

    def _follow(
        self,
        on_record: Callable[[str, Record | None], None],
        stopping: threading.Event,
        on_end: Callable[[], None],
    ) -> None:
        settings: dict[str, Setting] = {
            **self.consumer_config,
            "group.id": f"mm2-config-reader.{self.alias}",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "isolation.level": "read_committed",
        }
        ended = False
        if not self.ensure_until(stopping):
            return
        consumer = Consumer(ClientWatch(settings, alias=self.alias).settings())
        try:
            # A reader that stays (unlike check_leader_epoch): OFFSET_BEGINNING, not LOG_START
            # (mm2.kafka.first_requests).
            consumer.assign([TopicPartition(self.topic, 0, OFFSET_BEGINNING)])
            while not stopping.is_set():
                message = consumer.poll(0.5)
                if message is None:
                    continue
                error = message.error()
                if error is not None and error.code() == KafkaError._PARTITION_EOF:
                    if not ended:
                        ended = True
                        on_end()
                    continue
                if error is not None:
                    log.debug("%s on %s: %s", self.topic, self.alias, error.str())
                    continue
                key = (message.key() or b"").decode("utf-8", "replace")
                value = message.value()
                try:
                    record = None if value is None else json.loads(value)
                except ValueError:
                    log.warning(
                        "%s on %s: record %r is not JSON; ignored", self.topic, self.alias, key
                    )
                    continue
                try:
                    on_record(key, record)
                except Exception:
                    log.exception(
                        "%s on %s: applying record %r failed", self.topic, self.alias, key
                    )
        finally:
            consumer.close()

    def close(self) -> None:
        with self._lock:
            if self._producer is not None:
                self._producer.flush(5)
                self._producer = None


def check_leader_epoch(
    consumer_config: Mapping[str, str], topic: str, epoch: str, *, timeout: float = 30.0
) -> None:
    """Raise ProducerFencedError unless the newest `leader` record in `topic` is of `epoch`:
    a planner or copy task of a deposed (or paused) leader must not start, or it would fence
    the new leader's copy tasks (mm2.runtime.standby). Read up to the end the broker reports
    (committed records only), on the takeover's path: no wait for a position past markers."""
    settings: dict[str, Setting] = {
        "group.id": f"mm2-leader-check.{topic}",
        **consumer_config,
        "enable.auto.commit": False,
        "enable.partition.eof": True,
        "isolation.level": "read_committed",
        "fetch.wait.max.ms": 10,  # the end is reported at once, not after the broker's wait
        "auto.offset.reset": "earliest",  # LOG_START on a log that starts later
    }
    watch = ClientWatch(settings)
    consumer = Consumer(watch.settings())
    latest: Record = {}
    deadline = time.monotonic() + timeout
    try:
        consumer.assign([TopicPartition(topic, 0, LOG_START)])
        while True:
            if time.monotonic() > deadline:
                raise watch.error(f"reading {topic} to check leader epoch {epoch}", TimeoutError())
            message = consumer.poll(0.2)
            if message is None:
                continue
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    break
                raise watch.error(f"reading {topic} to check leader epoch {epoch}", error)
            if message.key() == b"leader" and message.value():
                try:
                    latest = json.loads(message.value() or b"{}")
                except ValueError:
                    continue
    finally:
        consumer.close()
    if latest.get("epoch") != epoch:
        who = latest.get("worker_id") or "no process yet"
        raise ProducerFencedError(
            f"leader epoch {epoch or '(none)'} is over: {topic} names {who} "
            f"(epoch {latest.get('epoch') or '(none)'}) as the leader now"
        )
