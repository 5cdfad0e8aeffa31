"""Fencing earlier copy tasks, and ending the transactions a broker's stop left open.

Before each copy epoch the planner fences every earlier holder of the copy tasks' transactional
ids (Connect's fenceZombies): InitProducerId bumps each id's producer epoch, and the coordinator
aborts the holder's open transaction. A zombie of an old assignment can then never commit again.

A target broker that stops while a copy task's transaction ends can leave that transaction open
for good on some of its partitions: their records were appended, but no marker will ever come
(docs/architecture.md, "Transactions left open"). Their last stable offset
stays behind the end, and every read_committed reader waits there for ever: on the offsets topic
the planner itself, on a remote topic the applications. Once the ids are fenced, nothing of the
flow's copy tasks can be open any more, so `end_left_open` ends what still holds a partition of
the offsets topic or of a remote topic back. A marker ends whatever transaction its producer id
has open on a partition, whatever the (older) epoch that opened it; so each of the ids, fenced
once more, opens a transaction over the held partitions, writes to each an aborted copy of the
first record the open transaction holds there, and aborts. The left-open records end aborted,
as the rest of their transaction did, and are copied again from the last committed positions.
A read_uncommitted reader sees one more aborted copy of a record, as after any abort. A
partition held by a producer that is none of these ids stays held: the flow stays DEGRADED
naming it, and the operator's runbook applies.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition

from mm2.errors import KafkaClientError
from mm2.kafka.failure import ClientLog, client_error, cluster_label
from mm2.kafka.first_requests import learn_brokers
from mm2.kafka.offsets import OffsetLister
from mm2.kafka.take import take
from mm2.kafka.topics import TopicAdmin
from mm2.records import TP

__all__ = ["end_left_open", "fence_transactional_ids", "held_back", "held_in"]

log = logging.getLogger(__name__)


def fence_transactional_ids(
    producer_config: Mapping[str, str], ids: list[str], topic: str, *, timeout: float = 30.0
) -> None:
    """Fence every earlier holder of each id. The ids are fenced side by side: each
    InitProducerId waits while the coordinator aborts the holder's open transaction, and one
    after the other those waits added up to seconds at every new copy epoch. `topic` (the
    offsets topic) is asked for first (mm2.kafka.first_requests)."""
    if not ids:
        return

    def fence(tid: str) -> None:
        _fenced(producer_config, tid, topic, timeout).flush(0)

    with ThreadPoolExecutor(max_workers=len(ids), thread_name_prefix="fence") as pool:
        list(pool.map(fence, ids))  # the first failure is raised


def held_back(lister: OffsetLister, partitions: Sequence[TP]) -> dict[TP, int]:
    """The partitions whose last stable offset is behind their end, with that offset (where
    the transaction that holds them starts)."""
    stable = lister.offsets(partitions, latest=True, read_committed=True)
    ends = lister.offsets(partitions, latest=True, read_committed=False)
    return {
        tp: stable[tp] for tp in partitions if tp in ends and stable.get(tp, ends[tp]) < ends[tp]
    }


def held_in(
    admin_config: Mapping[str, str], topics: Sequence[str], timeout: float
) -> dict[TP, int]:
    """held_back over every partition of `topics` (on the cluster of `admin_config`)."""
    lister = OffsetLister(admin_config, timeout=timeout)
    counts = TopicAdmin(admin_config, timeout=timeout).list_topics()
    return held_back(lister, [(t, p) for t in sorted(set(topics)) for p in range(counts.get(t, 0))])


def end_left_open(
    configs: tuple[Mapping[str, str], Mapping[str, str], Mapping[str, str]],
    ids: list[str],
    topics: Sequence[str],
    *,
    flow: str,
    timeout: float = 30.0,
) -> dict[TP, int]:
    """After fence_transactional_ids(ids): end the transactions left open on the partitions of
    `topics` (the offsets topic and the remote topics). `configs` are the target's producer,
    consumer and admin settings. Returns the partitions ended, with the offset each was held
    at; costs two ListOffsets when nothing is held."""
    producer_config, consumer_config, admin_config = configs
    if not ids or not topics:
        return {}
    label = cluster_label(admin_config)
    held = held_in(admin_config, topics, timeout)
    if not held:
        return {}
    firsts = _first_records(consumer_config, held, timeout, label)
    if not firsts:
        return {}
    with ThreadPoolExecutor(max_workers=len(ids), thread_name_prefix="end-open") as pool:
        list(pool.map(lambda tid: _abort_over(producer_config, tid, firsts, timeout), ids))
    still = held_back(OffsetLister(admin_config, timeout=timeout), sorted(firsts))
    ended = {tp: held[tp] for tp in firsts if still.get(tp) != held[tp]}
    if ended:
        log.warning(
            "%s: ended the transactions earlier copy tasks left open on %s: a broker stopped "
            "while they ended; their records are aborted and copied again from the last "
            "committed positions",
            flow,
            ", ".join(f"{t}-{p} at offset {at}" for (t, p), at in sorted(ended.items())),
        )
    return ended


def _fenced(producer_config: Mapping[str, str], tid: str, topic: str, timeout: float) -> Producer:
    """A producer of `tid` whose InitProducerId fenced every earlier holder (after asking
    for `topic`, so that it goes to the brokers themselves)."""
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
    learn_brokers(producer, topic)
    try:
        producer.init_transactions(timeout)
    except KafkaException as exc:
        producer.flush(0)
        raise client_error(
            f"fencing earlier copy tasks ({tid})", exc, cluster=cluster_label(producer_config)
        ) from exc
    return producer


def _first_records(
    consumer_config: Mapping[str, str], held: Mapping[TP, int], timeout: float, label: str
) -> dict[TP, Message]:
    """The record at each held partition's last stable offset: the first of the transaction
    that holds it (read uncommitted). A partition whose record does not come is left out."""
    consumer = Consumer(
        {
            **consumer_config,
            "group.id": "mm2-offsets-reader-left-open",
            "isolation.level": "read_uncommitted",
            "enable.auto.commit": False,
            "logger": ClientLog(label),
        }
    )
    found: dict[TP, Message] = {}
    try:
        consumer.assign([TopicPartition(t, p, at) for (t, p), at in held.items()])
        deadline = time.monotonic() + timeout + 0.5
        while len(found) < len(held) and time.monotonic() < deadline:
            for msg in take(consumer, len(held), 0.5):
                tp = (msg.topic() or "", msg.partition() or 0)
                if msg.error() is None and tp in held and tp not in found:
                    found[tp] = msg
    except KafkaException as exc:
        raise client_error("reading the records left open", exc, cluster=label) from exc
    finally:
        consumer.close()
    for (t, p), at in sorted(held.items()):
        if (t, p) not in found:
            log.info(
                "%s-%d held back at %d: its first open record did not come; left as it is", t, p, at
            )
    return found


def _abort_over(
    producer_config: Mapping[str, str], tid: str, firsts: Mapping[TP, Message], timeout: float
) -> None:
    """One transaction of `tid`, fenced once more, over every held partition, aborted: its
    markers end whatever transaction an earlier epoch of its producer id left open there.
    Flushed before the abort, so its records are on the log when they are aborted (librdkafka
    fails an abort of unsent records, librdkafka #4849)."""
    label = cluster_label(producer_config)
    producer = _fenced(producer_config, tid, min(firsts)[0], timeout)
    failed: list[KafkaError] = []

    def delivered(err: KafkaError | None, _msg: Message) -> None:
        if err is not None:
            failed.append(err)

    try:
        producer.begin_transaction()
        for (topic, partition), msg in sorted(firsts.items()):
            kind, stamp = msg.timestamp()
            producer.produce(
                topic,
                msg.value(),
                msg.key(),
                partition,
                delivered,
                timestamp=stamp if kind else 0,
                headers=msg.headers(),
            )
        if producer.flush(timeout) or failed:
            why = failed[0].str() if failed else f"not acknowledged in {timeout:.0f} s"
            raise KafkaClientError(
                f"ending the transactions left open on {label}: {why}", retriable=True
            )
        producer.abort_transaction(timeout)
    except KafkaException as exc:
        raise client_error("ending the transactions left open", exc, cluster=label) from exc
    finally:
        producer.flush(0)
