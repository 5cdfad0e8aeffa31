"""Reading records without waiting to fill a batch.

librdkafka's batch consume (`Consumer.consume(n, timeout)`) returns when it has `n` records or
when `timeout` has passed: a reader asking for 10,000 with 0.2 s waits the whole 0.2 s whenever
fewer arrive, which is every read that reaches the end of a log. `take` hands over what the
consumer has queued at once and waits only when nothing is, for the first record.
"""

from __future__ import annotations

from typing import Protocol

from confluent_kafka import Message

__all__ = ["Consuming", "take"]


class Consuming(Protocol):
    """What `take` needs of a consumer (confluent_kafka.Consumer, or a test's fake)."""

    def consume(self, num_messages: int, timeout: float) -> list[Message]: ...


def take(consumer: Consuming, most: int, timeout: float) -> list[Message]:
    """Up to `most` records queued now; when none is, the first to arrive within `timeout`
    seconds (an empty list when none does). Errors and end-of-partition events come as
    records do."""
    return consumer.consume(most, 0) or consumer.consume(1, timeout)
