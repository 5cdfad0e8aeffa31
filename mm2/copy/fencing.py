"""Fencing earlier copy tasks, and ending what their transactions left open on the offsets topic.

Before each copy epoch the planner fences every earlier holder of the copy tasks' transactional
ids (Connect's fenceZombies): InitProducerId bumps each id's producer epoch, and the coordinator
aborts the holder's open transaction. A zombie of an old assignment can then never commit again.

A broker that stops while a copy task's transaction ends can leave that transaction open for
good on some partitions of the offsets topic: their records were appended, but the coordinator
never writes their markers (docs/architecture.md, "A broker restart and open transactions").
Their last stable offset then stays behind the end, and every read_committed reader of the
positions (the planner, a copy task resuming) waits on it for ever. A marker ends whatever
transaction its producer id has open on a partition, whatever the epoch that opened it, so the
fenced producers end it themselves: each one opens a transaction on every partition of the
offsets topic still held back after the fencing, with one tombstone of a key nothing reads
(`["mm2-fence",{"flow":…}]`), and aborts it. The records left open are aborted with it, as the
rest of their transaction was, and are copied again from the last committed positions. A
partition held back by someone else's producer (not one of these ids) is not touched: the flow
stays DEGRADED naming it, as the operator's runbook says.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor

from confluent_kafka import KafkaException, Producer

from mm2.errors import KafkaClientError
from mm2.kafka.failure import ClientLog, client_error, cluster_label
from mm2.kafka.offsets import OffsetLister

__all__ = ["FENCE_CONNECTOR", "fence_transactional_ids", "held_back"]

log = logging.getLogger(__name__)

FENCE_CONNECTOR = "mm2-fence"

TP = tuple[str, int]


def fence_key(flow: str) -> bytes:
    """The key of the tombstones that end left-open transactions: Connect's key shape, of a
    connector no mirror runs, so Connect's offsets reader and mm2's decoders pass it by."""
    return json.dumps([FENCE_CONNECTOR, {"flow": flow}], separators=(",", ":")).encode()


def held_back(lister: OffsetLister, topic: str, partitions: int) -> dict[int, int]:
    """The partitions of `topic` whose last stable offset is behind their end, with that
    offset (where the transaction that holds them starts)."""
    wanted = [(topic, p) for p in range(partitions)]
    stable = lister.offsets(wanted, latest=True, read_committed=True)
    ends = lister.offsets(wanted, latest=True, read_committed=False)
    return {p: stable[(t, p)] for t, p in wanted if stable[(t, p)] < ends[(t, p)]}


def fence_transactional_ids(
    producer_config: Mapping[str, str],
    ids: list[str],
    *,
    timeout: float = 30.0,
    offsets_topic: str | None = None,
    admin_config: Mapping[str, str] | None = None,
    flow: str = "",
) -> dict[int, int]:
    """Fence every earlier holder of each id; with `offsets_topic` (and the target's
    `admin_config`), end the transactions they left open there. Returns the partitions of the
    offsets topic found held back after the fencing and ended, with the offset each was held at.

    The ids are fenced side by side: each InitProducerId waits while the coordinator aborts the
    holder's open transaction, and one after the other those waits added up to seconds at every
    new copy epoch."""
    if not ids:
        return {}
    label = cluster_label(producer_config)
    with ThreadPoolExecutor(max_workers=len(ids), thread_name_prefix="fence") as pool:
        producers = list(pool.map(lambda tid: _fence(producer_config, tid, timeout), ids))
        try:
            if offsets_topic is None or admin_config is None:
                return {}
            lister = OffsetLister(admin_config, timeout=timeout)
            count = _partition_count(producers[0], offsets_topic, timeout, label)
            held = held_back(lister, offsets_topic, count)
            if not held:
                return {}
            key = fence_key(flow)
            list(pool.map(lambda p: _end_open(p, offsets_topic, held, key, timeout, label),
                          producers))  # fmt: skip
            still = held_back(lister, offsets_topic, count)
            ended = {p: at for p, at in held.items() if still.get(p) != at}
            if ended:
                log.warning(
                    "%s: ended the transactions earlier copy tasks left open on %s (%s): a "
                    "broker stopped while they ended; their records are aborted and copied "
                    "again from the last committed positions",
                    flow, offsets_topic,
                    ", ".join(f"partition {p} at offset {at}" for p, at in sorted(ended.items())),
                )  # fmt: skip
            return ended
        finally:
            for producer in producers:
                producer.flush(0)


def _fence(producer_config: Mapping[str, str], tid: str, timeout: float) -> Producer:
    producer = Producer(
        {
            **producer_config,
            "logger": ClientLog(cluster_label(producer_config)),
            "transactional.id": tid,
            "enable.idempotence": True,
            "acks": "all",
            "allow.auto.create.topics": False,
        }
    )
    try:
        producer.init_transactions(timeout)
    except KafkaException as exc:
        producer.flush(0)
        raise client_error(
            f"fencing earlier copy tasks ({tid})", exc, cluster=cluster_label(producer_config)
        ) from exc
    return producer


def _partition_count(producer: Producer, topic: str, timeout: float, label: str) -> int:
    try:
        meta = producer.list_topics(topic, timeout=timeout)
    except KafkaException as exc:
        raise client_error(f"reading the partitions of {topic}", exc, cluster=label) from exc
    info = meta.topics.get(topic)
    return 0 if info is None or info.error is not None else len(info.partitions)


def _end_open(
    producer: Producer,
    topic: str,
    held: Mapping[int, int],
    key: bytes,
    timeout: float,
    label: str,
) -> None:
    """One transaction of this (freshly fenced) producer over every held partition, aborted:
    its markers end whatever transaction an earlier epoch of its producer id left open there.
    Flushed before the abort, so its records are on the log when they are aborted (librdkafka
    fails an abort of unsent records, librdkafka #4849)."""
    try:
        producer.begin_transaction()
        for partition in sorted(held):
            producer.produce(topic, None, key, partition)
        if producer.flush(timeout):
            raise KafkaClientError(
                f"ending the transactions left open on {topic} on {label}: not acknowledged "
                f"in {timeout:.0f} s", retriable=True,
            )  # fmt: skip
        producer.abort_transaction(timeout)
    except KafkaException as exc:
        raise client_error(
            f"ending the transactions left open on {topic}", exc, cluster=label
        ) from exc
