"""A new client's first requests, without librdkafka's 500 ms retries.

A librdkafka client learns the brokers from its first metadata answer and then drops the
connections to its bootstrap servers: a request still on one of them fails ("broker handle
destroyed") and goes out again only on one of librdkafka's fixed 500 ms timers (the producer
id, an offset query). A partition assigned at a logical offset (the beginning, the end) waits
for such an offset query, and the fetch that leaves meanwhile, without it, is held by the broker
for `fetch.wait.max.ms` (500 ms) when its partitions have nothing.

So a producer asks for metadata before its first InitProducerId (`learn_brokers`), and a
one-shot read of a whole log (the leader check) starts at LOG_START. Measured on one host,
starting a copy task: the leader check 0.52 s before, 0.03 s after; its producer's
InitProducerId 0.51 s in 5 of 8 starts, 0.52 s in 3 of 10 (the answer can still come over a
bootstrap connection just before it is dropped).

Readers that stay (the offsets topic's, the config topic's, offset syncs and checkpoints) keep
OFFSET_BEGINNING. Started at offset 0, the offsets topic's reader in each copy task read its
committed positions in 0.02-0.12 s instead of 0.58 s, but in the bench's W2 (5,000 records/s)
the copy tasks' librdkafka threads then took 13.7 CPU-s per 30 s instead of 8.0-8.9 and the
append p50 of the run's second half was 91 ms instead of 19-40 (one run against three; why is
not known).
"""

from __future__ import annotations

import contextlib
from typing import Protocol

from confluent_kafka import KafkaException

__all__ = ["LOG_START", "MetadataClient", "learn_brokers"]

# Where a reader of a whole log starts: a real offset, fetched at once, where OFFSET_BEGINNING
# asks the broker first. With `auto.offset.reset = earliest` a log whose start has moved past
# 0 (retention, DeleteRecords) is read from its start, as OFFSET_BEGINNING would.
LOG_START = 0


class MetadataClient(Protocol):
    """A Producer, Consumer or AdminClient: each answers list_topics."""

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> object: ...


def learn_brokers(client: MetadataClient, topic: str, timeout: float = 10.0) -> None:
    """Ask for `topic`'s metadata once, so that the requests that follow go to the brokers the
    answer names. A failure is left to those requests to report (they retry by themselves)."""
    with contextlib.suppress(KafkaException):
        client.list_topics(topic, timeout=timeout)
