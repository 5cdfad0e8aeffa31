"""W5's measuring parts: a source group that commits on a clock, a poller of the target group,
and the offset-sync latency worked out from both.

Every record's value starts with its partition and its sequence number in that partition
(`p<P>-s<N>-`); the source topic is fresh and written by one idempotent producer, so a source
record's offset is its sequence number. The target topic is read back after the run to find
where each source record landed, so a source commit at offset `o` has one exact translation on
the target: one past the copy of record `o - 1` (whatever transaction markers lie between).
A source commit "reached" the target when the target group's committed offset for that
partition is at or past that exact translation; its latency is from just before the source
commit call to the first poll of the target that showed it.
"""

from __future__ import annotations

import re
import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import ClassVar, Self

from confluent_kafka import OFFSET_BEGINNING, Consumer, ConsumerGroupTopicPartitions, KafkaError
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient

from mm2.kafka.take import take

__all__ = [
    "Commit",
    "SourceGroup",
    "TargetGroupPoller",
    "latencies",
    "target_offsets",
    "value_for",
]

_VALUE = re.compile(rb"p(\d+)-s(\d+)-")


def value_for(partition: int, sequence: int, pad: bytes) -> bytes:
    return b"p%d-s%d-" % (partition, sequence) + pad


@dataclass(frozen=True)
class Commit:
    """A source commit: when it was made (monotonic, just before the call) and its offsets."""

    at: float
    offsets: dict[int, int]


@dataclass
class _Background(ABC):
    """Runs `_run` in a daemon thread from start() to stop(): the source group and the target
    poller measure side by side while the benchmark drives the run. `_run` ends when `_stop`
    is set; a daemon thread, so one stuck in a client call does not hold the process."""

    thread_name: ClassVar[str]
    _stop: threading.Event = field(default_factory=threading.Event, init=False, repr=False)
    _thread: threading.Thread | None = field(default=None, init=False, repr=False)

    def start(self) -> Self:
        self._thread = threading.Thread(target=self._run, name=self.thread_name, daemon=True)
        self._thread.start()
        return self

    @abstractmethod
    def _run(self) -> None: ...

    def stop(self) -> None:
        """Asks `_run` to end and waits for it, at most 30 s: a thread stuck in a client call
        must not hang the benchmark, and what it gathered so far is kept either way."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(30)


@dataclass
class SourceGroup(_Background):
    """A consumer group on the source reading the topic and committing every `every_s`."""

    thread_name: ClassVar[str] = "w5-source-group"
    bootstrap: str
    group: str
    topic: str
    every_s: float = 0.2
    commits: list[Commit] = field(default_factory=list)
    error: str | None = None

    def _run(self) -> None:
        consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": self.group,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
            }
        )
        try:
            consumer.subscribe([self.topic])
            last: dict[int, int] = {}
            next_commit = time.monotonic() + self.every_s
            while not self._stop.is_set():
                for msg in take(consumer, 1000, 0.05):
                    if msg.error() is None:
                        last[msg.partition() or 0] = (msg.offset() or 0) + 1
                if time.monotonic() < next_commit or not last:
                    continue
                next_commit += self.every_s
                offsets = dict(last)
                at = time.monotonic()
                consumer.commit(
                    offsets=[KafkaTopicPartition(self.topic, p, o) for p, o in offsets.items()],
                    asynchronous=False,
                )
                self.commits.append(Commit(at, offsets))
        except Exception as exc:  # noqa: BLE001 - reported in the results, not raised in a thread
            self.error = repr(exc)
        finally:
            consumer.close()


@dataclass
class TargetGroupPoller(_Background):
    """Polls the target group's committed offsets every `every_s`: (monotonic time, offsets)."""

    thread_name: ClassVar[str] = "w5-target-poller"
    bootstrap: str
    group: str
    topic: str
    every_s: float = 0.05
    seen: list[tuple[float, dict[int, int]]] = field(default_factory=list)

    def _run(self) -> None:
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        while not self._stop.wait(self.every_s):
            request = [ConsumerGroupTopicPartitions(self.group)]
            try:
                answer = admin.list_consumer_group_offsets(request, request_timeout=10)
                listed = answer[self.group].result()
            except Exception:  # noqa: BLE001 - a group not there yet, or a slow answer
                continue
            offsets = {
                tp.partition: tp.offset
                for tp in listed.topic_partitions or []
                if tp.topic == self.topic and tp.offset >= 0 and not tp.error
            }
            if offsets:
                self.seen.append((time.monotonic(), offsets))


def target_offsets(bootstrap: str, topic: str, partitions: int) -> dict[int, dict[int, int]]:
    """partition -> {source sequence number -> offset on the target}, read to the end now."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"w5-reader-{time.monotonic_ns()}",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "isolation.level": "read_committed",
        }
    )
    out: dict[int, dict[int, int]] = {p: {} for p in range(partitions)}
    try:
        consumer.assign([KafkaTopicPartition(topic, p, OFFSET_BEGINNING) for p in out])
        done: set[int] = set()
        deadline = time.monotonic() + 300
        while len(done) < partitions and time.monotonic() < deadline:
            for msg in take(consumer, 10_000, 0.5):
                err = msg.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        done.add(msg.partition() or 0)
                    continue
                found = _VALUE.match(msg.value() or b"")
                if found:
                    out[msg.partition() or 0][int(found.group(2))] = msg.offset() or 0
    finally:
        consumer.close()
    return out


def latencies(
    commits: list[Commit],
    seen: list[tuple[float, dict[int, int]]],
    copies: dict[int, dict[int, int]],
) -> tuple[list[tuple[float, float]], int]:
    """(commit time, seconds to the target group reaching its exact translation) for each
    source commit and partition whose offset moved; and how many never reached it."""
    out: list[tuple[float, float]] = []
    missed = 0
    previous: dict[int, int] = {}
    for commit in commits:
        for partition, offset in commit.offsets.items():
            if offset <= previous.get(partition, 0):
                continue
            previous[partition] = offset
            landed = copies.get(partition, {}).get(offset - 1)
            if landed is None:
                missed += 1  # the record is not on the target: nothing can translate to it
                continue
            exact = landed + 1
            reached = next(
                (
                    t
                    for t, offsets in seen
                    if t >= commit.at and offsets.get(partition, -1) >= exact
                ),
                None,
            )
            if reached is None:
                missed += 1
            else:
                out.append((commit.at, reached - commit.at))
    return out, missed
