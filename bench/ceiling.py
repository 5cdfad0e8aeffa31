"""The fair ceiling of W1: as many plain copiers as the mirror has copy tasks, side by side.

Each copier is a process of its own (no shared interpreter lock): one plain consumer reading
its share of the source partitions (dealt round-robin, as the mirrors deal them) from offset 0
to their end, and one plain producer writing each record to the same partition of a topic on
the target, at the mirrors' producer rules (acks=all, no compression). No transactions, no
positions, no offset syncs: the most a copy with that many clients can do on this machine.
The rate is the records copied over the time from the first copier's start to the last one's
final acknowledgement.
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Sequence

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from bench.data import producer_config
from bench.verify import CONSUMER
from mm2.kafka.take import take

__all__ = ["copy_partitions", "plain_copy_rate"]


def copy_partitions(
    source: str, target: str, topic: str, target_topic: str, partitions: Sequence[int]
) -> int:
    """Copy `partitions` of `topic` from offset 0 to their ends at the start; the records."""
    consumer = Consumer({"bootstrap.servers": source, **CONSUMER, "group.id": "mm2-bench-copier"})
    producer = Producer(producer_config(target))
    copied = 0
    try:
        ends = {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
            for p in partitions
        }
        active = {p for p, end in ends.items() if end > 0}
        consumer.assign([TopicPartition(topic, p, 0) for p in active])
        while active:
            for msg in take(consumer, 10_000, 1.0):
                err, p = msg.error(), msg.partition() or 0
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        active.discard(p)
                        continue
                    raise RuntimeError(f"reading {topic}-{p}: {err}")
                while True:
                    try:
                        producer.produce(
                            target_topic,
                            msg.value(),
                            msg.key(),
                            partition=p,
                            headers=msg.headers(),
                            timestamp=msg.timestamp()[1],
                        )
                        break
                    except BufferError:
                        producer.poll(0.1)
                copied += 1
                if (msg.offset() or 0) + 1 >= ends[p]:
                    active.discard(p)
            producer.poll(0)
        left = producer.flush(120)
        if left:
            raise RuntimeError(f"{left} records not acknowledged by {target_topic}")
    finally:
        consumer.close()
    return copied


def plain_copy_rate(
    source: str, target: str, topic: str, target_topic: str, partitions: int, copiers: int
) -> tuple[float, int]:
    """(records/s, records) of `copiers` processes copying `topic`'s partitions at once."""
    shares = [list(range(i, partitions, copiers)) for i in range(min(copiers, partitions))]
    context = multiprocessing.get_context("spawn")
    with context.Pool(len(shares)) as pool:
        started = time.monotonic()
        counts = pool.starmap(
            copy_partitions, [(source, target, topic, target_topic, share) for share in shares]
        )
        elapsed = time.monotonic() - started
    total = sum(counts)
    return (total / elapsed if elapsed > 0 else 0.0), total
