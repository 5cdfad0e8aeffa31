"""The tests' gauge of a mirror's progress (tests.support.sequenced.Follower): a consumer that
received nothing for a while is replaced by one that goes on where it stopped, never from the
start again, so the gauge neither stalls on a stuck client nor counts a record twice."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Producer

from tests.support.kafka import KafkaCluster, create_topic, unique_name
from tests.support.mirror import PARTITIONS
from tests.support.sequenced import Follower, sequenced
from tests.support.waiting import eventually

pytestmark = [pytest.mark.integration]


def _produce(cluster: KafkaCluster, topic: str, first: int, count: int) -> None:
    producer = Producer({**cluster.client_config(), "enable.idempotence": True})
    for i in range(first, first + count):
        producer.produce(topic, sequenced(i), partition=i % PARTITIONS)
    assert producer.flush(30) == 0


def test_a_replaced_consumer_goes_on_from_the_next_offset(
    primary: KafkaCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    topic = create_topic(primary, unique_name("follower"), partitions=PARTITIONS)
    monkeypatch.setattr(Follower, "STUCK_S", 1.0)
    _produce(primary, topic, 0, 40)
    follower = Follower(primary, topic)
    try:
        eventually(lambda: follower.received == 40, timeout=60, what="the first 40 records")
        eventually(lambda: follower.replaced >= 2, timeout=60, what="two replaced consumers")
        _produce(primary, topic, 40, 40)
        eventually(
            lambda: follower.last() == {p: 19 for p in range(PARTITIONS)},
            timeout=60,
            what="sequence 19 in every partition",
        )
        time.sleep(3)  # a consumer that went back to the start would read 80 more by now
        assert follower.received == 80
        assert follower.copied() == 80
    finally:
        follower.close()
