"""The assignment feed: new partitions for running copy tasks, sent through the offsets topic.

A new source topic used to restart the flow's copy epoch: cancel the Spark job, fence, read the
positions, and launch every copy task again in fresh Python workers (seconds). Instead the planner
deals the new partitions to the running copy tasks (each partition already dealt stays where it
is) and publishes the epoch's additions here; each copy task reads them and starts copying.

The record lives in partition 0 of Connect's offsets topic (`mm2-offsets.<source>.internal`), in
Connect's own key shape `["mm2-copy-assignment",{"flow":"A->B"}]`, so a Kafka Connect worker
reading the topic (an Apache MM2 taking the flow over) sees the offsets of a connector it does
not run and leaves them alone. The value holds every addition of the epoch so far:
`{"epoch":"…","tasks":{"0":[[topic,partition,target topic,next offset],…],…}}`. The topic is
compacted, so only the newest record per key must be complete. A copy task reads partition 0
from the epoch's first record on: a task that Spark runs again after losing an executor finds
the additions too.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping, Sequence

from confluent_kafka import (
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)

from mm2.copy.spec import Assignment
from mm2.errors import KafkaClientError
from mm2.kafka.failure import ClientLog, client_error, cluster_label
from mm2.records.offsets_topic import ASSIGNMENT, kind_key

__all__ = [
    "ASSIGNMENT_PARTITION",
    "AssignmentFeed",
    "AssignmentPublisher",
    "assignment_key",
    "decode_additions",
    "encode_additions",
]

log = logging.getLogger(__name__)

ASSIGNMENT_PARTITION = 0


def assignment_key(flow: str) -> bytes:
    """Connect's offsets key shape, for a connector name no Connect worker runs."""
    return kind_key(ASSIGNMENT, {"flow": flow})


def encode_additions(epoch: str, additions: Mapping[int, Sequence[Assignment]]) -> bytes:
    tasks = {str(task): [_row(a) for a in added] for task, added in sorted(additions.items())}
    return json.dumps({"epoch": epoch, "tasks": tasks}, separators=(",", ":")).encode()


def _row(a: Assignment) -> list[str | int | bool]:
    row: list[str | int | bool] = [a.topic, a.partition, a.target_topic, a.next_offset, a.topic_id]
    return [*row, True] if a.as_is else row  # five fields, as before, unless it is set


def decode_additions(value: bytes | None, epoch: str, task: int) -> list[Assignment]:
    """The partitions added to `task` in `epoch` ([] for another epoch or a malformed value)."""
    if not value:
        return []
    try:
        loaded = json.loads(value)
        if not isinstance(loaded, dict) or loaded.get("epoch") != epoch:
            return []
        rows = loaded.get("tasks", {}).get(str(task), [])
        # Four fields before topic ids were written, five before `as_is`: a record of an
        # older mm2 still decodes.
        return [
            Assignment(
                str(row[0]),
                int(row[1]),
                str(row[2]),
                int(row[3]),
                str(row[4]) if len(row) > 4 else "",
                row[5] is True if len(row) > 5 else False,
            )
            for row in rows
        ]
    except (ValueError, TypeError, AttributeError, IndexError) as exc:
        log.warning("ignoring a malformed copy assignment record: %s", exc)
        return []


class AssignmentPublisher:
    """The planner's side: writes the additions of an epoch and says where they went."""

    def __init__(self, producer_config: Mapping[str, str], topic: str, flow: str) -> None:
        self._topic = topic
        self._key = assignment_key(flow)
        self._producer = Producer(
            {
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 0,
                **producer_config,
                # a deleted offsets topic is created again as it must be (PositionsTopic.ensure),
                # never by a produce with the broker's defaults
                "allow.auto.create.topics": False,
                "logger": ClientLog(cluster_label(producer_config)),
            }
        )

    def publish(
        self, epoch: str, additions: Mapping[int, Sequence[Assignment]], timeout: float = 10.0
    ) -> int:
        """Write the epoch's additions so far; returns the record's offset."""
        delivered: list[tuple[KafkaError | None, int]] = []

        def on_delivery(err: KafkaError | None, msg: Message) -> None:
            offset = msg.offset()
            delivered.append((err, -1 if offset is None else offset))

        self._producer.produce(
            self._topic,
            encode_additions(epoch, additions),
            self._key,
            partition=ASSIGNMENT_PARTITION,
            on_delivery=on_delivery,
        )
        self._producer.flush(timeout)
        if not delivered:
            raise KafkaClientError(
                f"publishing the copy assignment to {self._topic}: not acknowledged in "
                f"{timeout:.0f} s",
                retriable=True,
            )
        err, offset = delivered[0]
        if err is not None:
            raise client_error(f"publishing the copy assignment to {self._topic}", err)
        return offset

    def close(self) -> None:
        self._producer.flush(5)


class AssignmentFeed:
    """A copy task's side: the partitions its epoch added to it, read from `start` on."""

    def __init__(
        self,
        consumer_config: Mapping[str, str],
        topic: str,
        *,
        flow: str,
        epoch: str,
        task: int,
        start: int,
    ) -> None:
        self._epoch = epoch
        self._task = task
        self._key = assignment_key(flow)
        self._tp = TopicPartition(topic, ASSIGNMENT_PARTITION, start)
        self._consumer = Consumer(
            {
                "group.id": f"mm2-copy-assignment-{flow}",
                **consumer_config,
                "enable.auto.commit": False,
                # An end-of-partition event says how far a partition of only transaction
                # markers has been read (markers are never returned as records).
                "enable.partition.eof": True,
                # The planner's record is not transactional; the positions around it are, and
                # are skipped anyway: no need to wait for their commit.
                "isolation.level": "read_uncommitted",
                "logger": ClientLog(cluster_label(consumer_config)),
            }
        )
        self._consumer.assign([self._tp])
        self._read_to = start

    def poll(self) -> list[Assignment]:
        """Every partition added to this task by the records that have arrived (the newest
        record of the epoch holds them all); does not wait."""
        latest: bytes | None = None
        for msg in self._consumer.consume(1_000, 0):
            err = msg.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    self._read_to = max(self._read_to, msg.offset() or 0)
                continue  # anything else is transient: librdkafka retries by itself
            self._read_to = (msg.offset() or 0) + 1
            if msg.key() == self._key:
                latest = msg.value()
        return [] if latest is None else decode_additions(latest, self._epoch, self._task)

    def catch_up(self, timeout: float = 30.0) -> list[Assignment]:
        """Everything added up to now: read to the partition's end offset at the call."""
        try:
            _, end = self._consumer.get_watermark_offsets(self._tp, timeout=timeout)
        except KafkaException as exc:
            raise KafkaClientError(
                f"reading the copy assignment from {self._tp.topic}: {exc}", retriable=True
            ) from exc
        deadline = time.monotonic() + timeout
        added: dict[tuple[str, int], Assignment] = {}
        while True:
            for a in self.poll():
                added[(a.topic, a.partition)] = a
            if self._read_to >= end:
                return list(added.values())
            if time.monotonic() > deadline:
                raise KafkaClientError(
                    f"reading the copy assignment from {self._tp.topic} timed out at offset "
                    f"{self._read_to} of {end}",
                    retriable=True,
                )
            time.sleep(0.02)

    def close(self) -> None:
        self._consumer.close()
