"""`--warm-up-s N`: the same traffic on each cluster of a fresh pair before its mirror starts.

On a fresh pair the brokers' JIT compilers take a large share of the host's first minute: in
W2 at 5,000 records/s on the 2-core machine they took 41 of the host's 63 CPU-s in the first
30 s under mm2, and the target broker's compiler still took 6.6-7.3 CPU-s in the last 30 s
under mm2 against 2.2 under Apache MM2 at-least-once, compiling the transaction paths late
(bench/results/LOG.md). A long-running cluster compiled them long ago. With a warm-up every
system meets brokers that have served plain and transactional produce, read_uncommitted and
read_committed fetches, for the same N seconds; the mirrors' own start and JIT stay measured.
Nothing of it matches a mirror's topics, and no group commits (assigned consumers), so no
mirror copies or checkpoints it.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Sequence

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from bench.data import Admin

__all__ = ["TOPIC", "warm_up"]

TOPIC = "bench-warm-up"
_PARTITIONS = 4
_BATCH = 50  # records per transaction: 40 transactions a second make 2,000 records/s
_PAUSE_S = 0.025
_VALUE = b"w" * 1024


def warm_up(bootstraps: Sequence[str], seconds: float) -> None:
    """Plain and transactional writes, and both kinds of reader, on each cluster at once, for
    `seconds`; raises what a cluster's traffic raised."""
    if seconds <= 0:
        return
    failures: list[Exception] = []

    def run(bootstrap: str) -> None:
        try:
            _traffic(bootstrap, seconds)
        except (KafkaException, RuntimeError, OSError) as exc:  # to the caller's thread
            failures.append(exc)

    threads = [threading.Thread(target=run, args=(b,), daemon=True) for b in bootstraps]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(seconds + 120)
    if any(thread.is_alive() for thread in threads):  # its traffic would overlap the measurement
        raise RuntimeError(f"warming the clusters up did not end {seconds + 120:.0f} s on")
    if failures:
        raise RuntimeError(f"warming the clusters up failed: {failures[0]}") from failures[0]


def _traffic(bootstrap: str, seconds: float) -> None:
    Admin(bootstrap).create_topics([TOPIC], _PARTITIONS)
    plain = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    txn = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": f"bench-warm-{uuid.uuid4().hex}"}
    )
    txn.init_transactions(60)
    readers = [
        Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": "bench-warm-up",  # assigned, never committed: no group appears
                "enable.auto.commit": False,
                "isolation.level": level,
            }
        )
        for level in ("read_uncommitted", "read_committed")
    ]
    for reader in readers:
        reader.assign([TopicPartition(TOPIC, p, 0) for p in range(_PARTITIONS)])
    deadline = time.monotonic() + seconds
    i = 0
    try:
        while time.monotonic() < deadline:
            txn.begin_transaction()
            for _ in range(_BATCH):
                txn.produce(TOPIC, _VALUE, partition=i % _PARTITIONS)
                plain.produce(TOPIC, _VALUE, partition=i % _PARTITIONS)
                i += 1
            txn.commit_transaction(60)
            plain.poll(0)
            for reader in readers:
                reader.consume(10_000, 0)
            time.sleep(_PAUSE_S)
        plain.flush(60)
    finally:
        for reader in readers:
            reader.close()
