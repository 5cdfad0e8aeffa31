"""Records that carry their partition's sequence number, and the exactness check over them.

An idempotent producer writes value `p<partition>-s<sequence>-...` to each source partition,
0, 1, 2, ... in order; a read_committed reader of the remote topic must then see, per partition,
every sequence number once and in order: 0 lost, 0 duplicates, 0 reordered. `Follower` gauges
the mirror's progress while faults happen; `exactness` judges the end.
"""

from __future__ import annotations

import itertools
import logging
import re
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition

from mm2.kafka.take import take
from mm2.localcluster import LocalCluster
from tests.support.kafka import Cluster, Record, read_topic
from tests.support.mirror import PARTITIONS, ContinuousProducer

__all__ = [
    "Exactness",
    "Follower",
    "answers",
    "exactness",
    "sequence",
    "sequenced",
    "sequenced_producer",
]

log = logging.getLogger(__name__)

_VALUE = re.compile(rb"p(\d+)-s(\d+)-")
_PAD = b"." * 100


def sequenced(i: int) -> bytes:
    """Record i of the producer (partition i % PARTITIONS): its partition and sequence number."""
    return b"p%d-s%d-" % (i % PARTITIONS, i // PARTITIONS) + _PAD


def sequenced_producer(source: LocalCluster, topic: str, rate: int) -> ContinuousProducer:
    """An idempotent producer of sequenced records at `rate` records/s until stopped."""
    return ContinuousProducer(
        source,
        topic,
        rate=rate,
        limit=10**9,
        seconds=3600,
        value=sequenced,
        config={"enable.idempotence": True},
    )


def sequence(partition: int, value: bytes | None) -> int:
    match = _VALUE.match(value or b"")
    assert match is not None, f"partition {partition}: a record not written by the test: {value!r}"
    assert int(match[1]) == partition, f"partition {partition} holds a record of {match[1]!r}"
    return int(match[2])


def sequences(records: list[Record], partition: int) -> list[int]:
    return [sequence(partition, r[2]) for r in records]


class Follower:
    """A read_committed consumer of the remote topic, in a thread, from the topic's start: the
    last sequence number it has seen in each partition. A cheap gauge of the mirror's progress
    that reconnects by itself after the target's outage; the final check reads everything
    again.

    A consumer that receives nothing for STUCK_S seconds is replaced by a new one that goes on
    from the next offset of each partition: a librdkafka client told "no leader" while the
    target starts up can keep its partitions without a leader for good (librdkafka issue 5430)
    and never fetch again, without an error. Seen here: after a target restart the gauge
    stopped, while the remote topic's last stable offsets kept moving. A new consumer reads
    only what is committed, so a transaction the mirror left open still stops the gauge."""

    STUCK_S = 30.0

    def __init__(self, target: Cluster, topic: str) -> None:
        self._config = {
            **target.client_config(),
            "group.id": f"follower-{uuid.uuid4().hex[:6]}",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
        }
        self._topic = topic
        self._next = {p: OFFSET_BEGINNING for p in range(PARTITIONS)}
        self._consumer = self._open()
        self._last: dict[int, int] = {}
        self.received = 0  # records received, over every consumer
        self.replaced = 0  # consumers replaced because they received nothing for STUCK_S
        self._error: Exception | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="follower", daemon=True)
        self._thread.start()

    def _open(self) -> Consumer:
        consumer = Consumer(self._config)
        consumer.assign([TopicPartition(self._topic, p, o) for p, o in self._next.items()])
        return consumer

    def _run(self) -> None:
        received = time.monotonic()
        try:
            while not self._stop.is_set():
                for m in take(self._consumer, 1000, 0.5):
                    partition, offset = m.partition(), m.offset()
                    if m.error() is None and partition is not None and offset is not None:
                        self._last[partition] = sequence(partition, m.value())
                        self._next[partition] = offset + 1
                        self.received += 1
                        received = time.monotonic()
                if time.monotonic() - received > self.STUCK_S:
                    self._consumer.close()
                    self._consumer = self._open()
                    self.replaced += 1
                    received = time.monotonic()
                    log.info("follower: nothing for %.0f s; a new consumer", self.STUCK_S)
        except Exception as exc:  # handed to the test's thread by copied()
            self._error = exc
        finally:
            self._consumer.close()

    def last(self) -> dict[int, int]:
        """The last sequence number seen in each partition (a copy)."""
        return dict(self._last)

    def copied(self) -> int:
        """Per partition, the last sequence number seen + 1, summed: how far the mirror got."""
        if self._error is not None:
            raise AssertionError(f"the follower failed: {self._error!r}")
        return sum(seq + 1 for seq in self._last.values())

    def close(self) -> None:
        self._stop.set()
        self._thread.join(30)


def answers(check: Callable[[], bool]) -> Callable[[], bool]:
    """check(), False while a cluster does not answer yet."""

    def safe() -> bool:
        try:
            return check()
        except KafkaException:
            return False

    return safe


@dataclass(frozen=True)
class Exactness:
    records: int  # on the source
    lost: int
    duplicates: int
    reordered: int
    foreign: int  # on the target, not on the source


def exactness(source: LocalCluster, target: LocalCluster, topic: str) -> Exactness:
    """The source topic against its remote topic read_committed, per partition; asserts that
    the source holds each partition's sequence numbers 0..n-1 and that, where nothing is lost,
    doubled, reordered or foreign, each remote partition is its source partition."""
    upstream = read_topic(source.bootstrap_servers, topic)
    downstream = read_topic(
        target.bootstrap_servers, f"primary.{topic}", **{"isolation.level": "read_committed"}
    )
    assert sorted(downstream) == sorted(upstream) == list(range(PARTITIONS))
    lost = duplicates = reordered = foreign = 0
    for p in range(PARTITIONS):
        want = sequences(upstream[p], p)
        # The idempotent producer wrote each sequence number once, in order.
        assert want == list(range(len(want))), f"source partition {p} is not 0..n-1"
        got = sequences(downstream[p], p)
        p_lost = len(set(want) - set(got))
        p_duplicates = len(got) - len(set(got))
        p_reordered = sum(1 for a, b in itertools.pairwise(got) if b < a)
        log.info(
            "partition %d: %d on the source, %d on the target (read_committed): "
            "%d lost, %d duplicates, %d reordered",
            p,
            len(want),
            len(got),
            p_lost,
            p_duplicates,
            p_reordered,
        )
        lost += p_lost
        duplicates += p_duplicates
        reordered += p_reordered
        foreign += len(set(got) - set(want))
    found = Exactness(sum(len(r) for r in upstream.values()), lost, duplicates, reordered, foreign)
    if (lost, duplicates, reordered, foreign) == (0, 0, 0, 0):
        for p in range(PARTITIONS):
            assert sequences(downstream[p], p) == sequences(upstream[p], p), f"partition {p}"
    return found
