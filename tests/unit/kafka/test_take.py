"""mm2.kafka.take: what is queued without waiting; a wait only for the first record."""

from __future__ import annotations

from typing import cast

from confluent_kafka import Message

from mm2.kafka.take import take


class _Queue:
    """librdkafka's batch consume: `n` records, or after the whole `timeout` what is queued
    (records arriving meanwhile: `arriving`). Time is counted, not slept."""

    def __init__(self, queued: int, arriving: int = 0) -> None:
        self.queued = queued
        self.arriving = arriving
        self.waited = 0.0

    def consume(self, num_messages: int, timeout: float) -> list[Message]:
        if self.queued < num_messages and timeout > 0:
            self.waited += timeout
            self.queued += self.arriving
            self.arriving = 0
        n = min(num_messages, self.queued)
        self.queued -= n
        return [cast(Message, object()) for _ in range(n)]


def test_queued_records_are_handed_over_without_waiting() -> None:
    queue = _Queue(queued=3)
    assert len(take(queue, 10_000, 0.2)) == 3
    assert queue.waited == 0  # consume(10_000, 0.2) would have waited 0.2 s for the rest


def test_with_nothing_queued_it_waits_for_the_first_record_only() -> None:
    queue = _Queue(queued=0, arriving=1)
    assert len(take(queue, 10_000, 0.2)) == 1
    assert queue.waited == 0.2  # the fake counts a wait as whole; librdkafka ends it early
    assert take(_Queue(queued=0), 10_000, 0.2) == []


def test_at_most_the_number_asked_for() -> None:
    queue = _Queue(queued=25)
    assert len(take(queue, 10, 0.2)) == 10 and queue.queued == 15
