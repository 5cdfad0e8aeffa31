"""A copy task says it is copying: one record in the offsets topic, read by its planner.

Spark launching a copy task says nothing about when it copies: its Python worker starts, its
clients connect, its producer fences the earlier holders of its transactional id, and it reads
the positions committed since the epoch began (seconds in all). Until its planner reads this
record for the running epoch, the copy task is shown UNASSIGNED, so a flow is RUNNING only once
its copy tasks copy (docs/architecture.md, "The Connect view shows the copy tasks").

The record is written, like the assignment feed's (mm2.copy.assignment), to partition 0 of the
offsets topic in Connect's key shape `["mm2-copy-ready",{"flow":"A->B","task":N}]`, with the
value `{"epoch":"…"}`: a Kafka Connect worker reading the topic sees the offsets of a connector
it does not run, and mm2's positions reader passes it to the planner instead of decoding it as
a position. The topic is compacted: one record per copy task is kept.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass

from mm2.errors import KafkaClientError
from mm2.kafka.producer import RecordProducer
from mm2.records.offsets_topic import READY, kind_key, partition_of

__all__ = ["CopyReady", "announce", "decode_ready", "ready_key"]

log = logging.getLogger(__name__)

_PARTITION = 0


@dataclass(frozen=True)
class CopyReady:
    """Copy task `task` of `flow` copies in epoch `epoch`."""

    flow: str
    task: int
    epoch: str


def ready_key(flow: str, task: int) -> bytes:
    return kind_key(READY, {"flow": flow, "task": task})


def decode_ready(key: bytes | None, value: bytes | None) -> CopyReady | None:
    """The notice a record of the offsets topic holds, if it is one (else None)."""
    part = partition_of(key, READY)
    if part is None or not value:
        return None
    try:
        body = json.loads(value)
        if not isinstance(body, dict):
            return None
        return CopyReady(str(part["flow"]), int(part["task"]), str(body["epoch"]))
    except (ValueError, KeyError, TypeError):
        return None


def announce(topic: str, producer_config: Mapping[str, str], ready: CopyReady) -> None:
    """Write the notice on a thread of its own, so that copying does not wait for it (it is
    idempotent and outside the copy task's transactions: a task with nothing to copy commits
    none); a notice not written is logged, and the task copies anyway (shown as starting)."""

    def send() -> None:
        producer = RecordProducer({**producer_config, "allow.auto.create.topics": False})
        value = json.dumps({"epoch": ready.epoch}, separators=(",", ":")).encode()
        try:
            producer.send(topic, ready_key(ready.flow, ready.task), value, partition=_PARTITION)
            producer.flush(30)
        except KafkaClientError as exc:
            log.warning(
                "%s task %d: the notice that it copies was not written to %s (%s)",
                ready.flow,
                ready.task,
                topic,
                exc,
            )

    threading.Thread(target=send, name=f"ready-{ready.flow}-{ready.task}", daemon=True).start()
