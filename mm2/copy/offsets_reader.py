"""The one reader of a flow's offsets topic: to its end, then what arrives (read_committed).

Every reader of the topic is one of these, handed a decoder that picks the kinds it wants
(mm2.records.offsets_topic): the planner (positions, ready notices, source ends) before each
copy epoch and then for the metrics; a copy task (its positions when it resumes, the partitions
its epoch adds, the schema-ID map: one consumer for all three, mm2.copy.task_offsets); the
schema task (the map it wrote before); the lag reader. The consumer and the end offsets are
injected for unit tests (`consumer`, `ends`); by default they are real clients.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, Generic, Protocol, TypeVar

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from mm2.errors import KafkaClientError, TopicNotFoundError
from mm2.kafka.failure import ClientLog, client_error, cluster_label, ends_a_consumer
from mm2.kafka.offsets import OffsetLister
from mm2.kafka.take import take

__all__ = ["Decode", "Ends", "KeyPartitions", "OffsetsTopicReader", "ReaderConsumer"]

# What the metadata answer says of a topic that is not there.
_MISSING = frozenset({KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC})
R = TypeVar("R")
# (key, value, headers) -> what the record holds (mm2.copy.positions.R), or None
# when the record is not ours.
Decode = Callable[[bytes | None, bytes | None, object], R | None]
# The topic's partition count -> the partitions that hold the keys a reader waits for.
KeyPartitions = Callable[[int], "set[int]"]
# (partitions, timeout, stable) -> each partition's end offset (its last stable offset if stable)
Ends = Callable[[list[int], float, bool], dict[int, int]]


class ReaderConsumer(Protocol):
    """The calls the reader makes of its consumer (confluent_kafka.Consumer has them)."""

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> Any: ...
    def incremental_assign(self, partitions: list[TopicPartition]) -> None: ...
    def consume(self, num_messages: int = 1, timeout: float = -1) -> Any: ...
    def position(self, partitions: list[TopicPartition]) -> list[TopicPartition]: ...
    def close(self) -> None: ...


class OffsetsTopicReader(Generic[R]):
    """Reads every partition of the offsets topic (read_committed), from the start, and then
    whatever arrives; keeps what `decode` makes of a record (None: not ours)."""

    def __init__(
        self,
        consumer_config: Mapping[str, str],
        admin_config: Mapping[str, str],
        topic: str,
        *,
        decode: Decode[R],
        consumer: ReaderConsumer | None = None,
        ends: Ends | None = None,
    ) -> None:
        self.topic = topic
        self._admin_config = dict(admin_config)
        self._lister: OffsetLister | None = None
        self._ends_of = ends or self._listed_ends
        self._decode = decode
        self._cluster = cluster_label(consumer_config)
        self._consumer: ReaderConsumer = consumer or Consumer(
            {
                "group.id": f"mm2-offsets-reader-{topic}",
                **consumer_config,
                "enable.auto.commit": False,
                "enable.partition.eof": True,
                "isolation.level": "read_committed",
                "auto.offset.reset": "earliest",
                "logger": ClientLog(cluster_label(consumer_config)),
            }
        )
        self._assigned: set[int] = set()
        # How far each partition has been read: past the last record, to the consumer's
        # position (past markers and aborted records, which return no record), or to where
        # the consumer said end-of-partition.
        self._read_up_to: dict[int, int] = {}
        self._backlog: list[R] = []

    def _assign_new_partitions(self, timeout: float) -> list[int]:
        try:
            meta = self._consumer.list_topics(self.topic, timeout=timeout)
        except KafkaException as exc:  # judged like every Kafka error: credentials end it
            raise client_error(
                f"reading the partitions of {self.topic}", exc, cluster=self._cluster
            ) from exc
        info = meta.topics.get(self.topic)
        if info is None or (info.error is not None and info.error.code() in _MISSING):
            raise TopicNotFoundError(f"{self.topic} does not exist on {self._cluster}")
        if info.error is not None:
            raise KafkaClientError(
                f"{self.topic} is not readable on {self._cluster}: {info.error}",
                retriable=True,
            )
        partitions = sorted(info.partitions)
        new = [p for p in partitions if p not in self._assigned]
        if new:
            self._consumer.incremental_assign(
                # OFFSET_BEGINNING, not LOG_START: see mm2.kafka.first_requests
                [TopicPartition(self.topic, p, -2) for p in new]
            )
            self._assigned.update(new)
        return partitions

    def _listed_ends(self, partitions: list[int], timeout: float, stable: bool) -> dict[int, int]:
        """Every partition's end offset (with `stable`, its last stable offset), in one request
        (not one round trip per partition)."""
        lister = self._lister or OffsetLister(self._admin_config, timeout=timeout)
        self._lister = lister
        ends = lister.offsets(
            [(self.topic, p) for p in partitions], latest=True, read_committed=stable
        )
        return {p: end for (_, p), end in ends.items()}

    def read_to_end(
        self, timeout: float = 15.0, *, holding: KeyPartitions | None = None, stable: bool = False
    ) -> list[R]:
        """Every new record up to the end offsets seen at the call (after fencing, the end).

        With `holding`, only the partitions that hold the keys the caller needs are waited
        for (every partition is still read, as far as it can be): another flow's or another
        connector's transaction left open in the others, or their leader being away, does not
        hold this reader back. With `stable`, only up to each partition's last stable offset:
        what is committed now, without waiting for a transaction still open (a killed copy
        task's, which the broker aborts only at its timeout). Records read by a call that
        times out are kept and returned by the next call: they have left the consumer, and a
        position dropped would be a position lost.
        """
        out = self._read_to_end(timeout, holding, stable)
        self._backlog = []
        return out

    def _read_to_end(self, timeout: float, holding: KeyPartitions | None, stable: bool) -> list[R]:
        every = self._assign_new_partitions(min(timeout, 10.0))
        partitions = every if holding is None else sorted(set(every) & holding(len(every)))
        ends = self._ends_of(list(partitions), min(timeout, 10.0), stable)
        out = self._backlog
        deadline = time.monotonic() + timeout
        while True:
            behind = [p for p in partitions if self._read_up_to.get(p, 0) < ends[p]]
            if not behind:
                return out
            if time.monotonic() > deadline:
                late = ", ".join(
                    f"{p} at {self._read_up_to.get(p, 0)} of {ends[p]}" for p in behind
                )
                raise KafkaClientError(
                    f"reading {self.topic} to its end timed out (at {late}); if this lasts, "
                    "a transaction that never ends may hold those partitions back "
                    "(kafka-transactions.sh find-hanging, docs/operations.md)",
                    retriable=True,
                )
            out.extend(self._consume(0.2))
            self._note_positions(behind)

    def _note_positions(self, partitions: list[int]) -> None:
        """How far the consumer has handed out each partition: its position moves past commit
        markers and aborted records, which no record shows, as soon as a fetch answer holding
        them is served. So a read to the end need not wait for the end-of-partition event,
        which comes only with an empty fetch answer, after the broker's `fetch.wait.max.ms`
        (500 ms): the reader fetches at the broker's pace, not twenty times a second."""
        asked = [TopicPartition(self.topic, p) for p in partitions]
        for tp in self._consumer.position(asked):
            if tp.offset > self._read_up_to.get(tp.partition, 0):
                self._read_up_to[tp.partition] = tp.offset

    def poll(self, timeout: float = 0.0) -> list[R]:
        """The records that have arrived (waiting up to `timeout` for the first)."""
        out = self._backlog + self._consume(timeout)
        self._backlog = []
        return out

    def _consume(self, timeout: float) -> list[R]:
        out: list[R] = []
        for msg in take(self._consumer, 10_000, timeout):
            err = msg.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    self._read_up_to[msg.partition() or 0] = msg.offset() or 0
                    continue
                if ends_a_consumer(err):
                    raise client_error(f"reading {self.topic}", err)
                continue  # transient: librdkafka retries by itself
            self._read_up_to[msg.partition() or 0] = (msg.offset() or 0) + 1
            record = self._decode(msg.key(), msg.value(), msg.headers())
            if record is not None:
                out.append(record)
        return out

    def close(self) -> None:
        self._consumer.close()
