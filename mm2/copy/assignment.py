"""Partitions added to running copy tasks, sent through the offsets topic.

A new source topic does not restart the flow's copy epoch (cancel the Spark job, fence, read
the positions, launch every copy task again in fresh Python workers: seconds). The planner
deals the new partitions to the running copy tasks (each partition already dealt stays where it
is) and publishes the epoch's additions here; each copy task's reader of the offsets topic
(mm2.copy.task_offsets) takes them and the task starts copying.

The record lives in partition 0 of Connect's offsets topic (`mm2-offsets.<source>.internal`), in
Connect's own key shape `["mm2-copy-assignment",{"flow":"A->B"}]`, so a Kafka Connect worker
reading the topic (an Apache MM2 taking the flow over) sees the offsets of a connector it does
not run and leaves them alone. The value holds every addition of the epoch so far:
`{"epoch":"…","tasks":{"0":[[topic,partition,target topic,next offset],…],…}}`. The topic is
compacted, so only the newest record per key must be complete; each epoch begins with an empty
record of its own id. A copy task reads the topic from its start and takes the records of its
epoch: a task that Spark runs again after losing an executor finds the additions too.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence

from confluent_kafka import (
    KafkaError,
    Message,
    Producer,
)

from mm2.copy.spec import Assignment
from mm2.errors import KafkaClientError
from mm2.kafka.failure import ClientLog, client_error, cluster_label
from mm2.records.offsets_topic import ASSIGNMENT, kind_key

__all__ = [
    "ASSIGNMENT_PARTITION",
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
    if a.heartbeats:  # five fields, as before, for every other partition
        return [*row, a.as_is, True]
    return [*row, True] if a.as_is else row


def decode_additions(value: bytes | None, epoch: str, task: int) -> list[Assignment]:
    """The partitions added to `task` in `epoch` ([] for another epoch or a malformed value)."""
    if not value:
        return []
    try:
        loaded = json.loads(value)
        if not isinstance(loaded, dict) or loaded.get("epoch") != epoch:
            return []
        rows = loaded.get("tasks", {}).get(str(task), [])
        # Four fields before topic ids were written, five before `as_is`, six before
        # `heartbeats`: a record of an older mm2 still decodes.
        return [
            Assignment(
                str(row[0]),
                int(row[1]),
                str(row[2]),
                int(row[3]),
                str(row[4]) if len(row) > 4 else "",
                row[5] is True if len(row) > 5 else False,
                row[6] is True if len(row) > 6 else False,
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
