"""A partition the source consumer waits on without fetching (mm2.copy.stuck): found from the
consumer's statistics and assigned again from its last commit, after the open transaction."""

from __future__ import annotations

import json
from typing import Any, cast

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from mm2.copy.loop import CopyLoop
from mm2.copy.spec import Assignment
from mm2.copy.stuck import STUCK_S, FetchStates
from mm2.copy.transaction import TransactionSink, producer_settings
from mm2.errors import KafkaClientError
from mm2.kafka.failure import AuthAlarm
from mm2.offset_syncs.emitter import OffsetSyncEmitter
from tests.support.specs import copy_settings, copy_spec
from tests.unit.copy.test_copy_loop import FakeConsumer, FakeMessage, FakeProducer


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def stats(**states: str) -> str:
    """A statistics document with each `topic_partition=state` (librdkafka's STATISTICS.md)."""
    topics: dict[str, Any] = {}
    for name, state in states.items():
        topic, partition = name.rsplit("_", 1)
        parts = topics.setdefault(topic, {"partitions": {"-1": {"fetch_state": "none"}}})
        parts["partitions"][partition] = {"fetch_state": state, "next_offset": 12}
    return json.dumps({"name": "rdkafka#consumer-1", "topics": topics})


def test_a_partition_waiting_in_one_state_too_long_is_reported_once_with_its_state() -> None:
    clock = Clock()
    states = FetchStates(clock)
    states(stats(orders_0="validate-epoch-wait", orders_1="active", payments_2="offset-query"))
    clock.now += STUCK_S / 2
    states(stats(orders_0="validate-epoch-wait", orders_1="active", payments_2="offset-wait"))
    assert states.stuck() == {}
    clock.now += STUCK_S / 2 + 1
    states(stats(orders_0="validate-epoch-wait", orders_1="active", payments_2="offset-wait"))
    # payments-2 moved from one waiting state to another: it counts from the move
    assert states.stuck() == {("orders", 0): "validate-epoch-wait"}
    assert states.stuck() == {}  # reported once; it counts again from the next document
    states(stats(orders_0="validate-epoch-wait"))
    clock.now += STUCK_S + 1
    assert states.stuck() == {("orders", 0): "validate-epoch-wait"}


def test_a_partition_that_fetches_again_or_a_broken_document_reports_nothing() -> None:
    clock = Clock()
    states = FetchStates(clock)
    states(stats(orders_0="validate-epoch-wait"))
    clock.now += STUCK_S / 2
    states(stats(orders_0="active"))
    clock.now += STUCK_S
    states("{not json")
    assert states.stuck() == {}


class AssigningConsumer(FakeConsumer):
    def __init__(self) -> None:
        super().__init__({})
        self.calls: list[tuple[str, list[tuple[str, int, int]]]] = []

    def incremental_unassign(self, partitions: list[TopicPartition]) -> None:
        self.calls.append(("unassign", [(p.topic, p.partition, p.offset) for p in partitions]))

    def incremental_assign(self, partitions: list[TopicPartition]) -> None:
        self.calls.append(("assign", [(p.topic, p.partition, p.offset) for p in partitions]))


def test_a_stuck_partition_is_assigned_again_from_the_commit_of_the_open_transaction() -> None:
    spec = copy_spec(
        transactional=True,
        partitions=[Assignment("orders", 0, "primary.orders", 10)],
        offsets_topic="mm2-offsets.primary.internal",
        settings=copy_settings(),
    )
    producer: Any = FakeProducer(producer_settings(spec))
    consumer = AssigningConsumer()
    clock = Clock()
    states = FetchStates(clock)
    copier = CopyLoop(
        spec,
        consumer=cast(Any, consumer),
        alarm=AuthAlarm("primary"),
        sink=TransactionSink(spec, producer, AuthAlarm("backup")),
        syncs=OffsetSyncEmitter("", None, 100),
        offsets=None,
        fetch_states=states,
    )
    copier._copy(cast(Any, [FakeMessage("orders", 0, o) for o in (10, 11)]))
    states(stats(orders_0="validate-epoch-wait"))
    clock.now += STUCK_S + 1
    copier._assign_stuck()
    assert producer.calls[-1] == "commit"  # the records read before it commit first
    assert consumer.calls == [
        ("unassign", [("orders", 0, -1001)]),
        ("assign", [("orders", 0, 12)]),
    ]
    copier._assign_stuck()  # reported once
    assert len(consumer.calls) == 2


def led(**leaders: int) -> str:
    """A statistics document with each `topic_partition=leader`, fetching."""
    topics: dict[str, Any] = {}
    for name, leader in leaders.items():
        topic, partition = name.rsplit("_", 1)
        parts = topics.setdefault(topic, {"partitions": {}})
        parts["partitions"][partition] = {"fetch_state": "active", "leader": leader}
    return json.dumps({"topics": topics})


def test_a_partition_without_a_leader_too_long_is_reported_once_per_interval() -> None:
    clock = Clock()
    states = FetchStates(clock)
    states(led(orders_0=-1, orders_1=1))
    clock.now += STUCK_S + 1
    states(led(orders_0=-1, orders_1=1))
    assert states.leaderless() == [("orders", 0)]
    assert states.leaderless() == []  # its clock started again
    states(led(orders_0=1, orders_1=1))  # a leader again: nothing to report later
    clock.now += STUCK_S + 1
    assert states.leaderless() == []


class Partition:
    def __init__(self, leader: int) -> None:
        self.leader = leader


class Topic:
    def __init__(self, leaders: dict[int, int]) -> None:
        self.error = None
        self.partitions = {p: Partition(b) for p, b in leaders.items()}


class Metadata:
    def __init__(self, topics: dict[str, Topic]) -> None:
        self.topics = topics


class AskingConsumer(AssigningConsumer):
    """Says what the cluster says of each topic's leaders, or fails as an absent cluster."""

    def __init__(self, leaders: dict[int, int] | None) -> None:
        super().__init__()
        self.leaders = leaders

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> Metadata:
        if self.leaders is None:
            raise KafkaException(KafkaError(KafkaError._TRANSPORT, "down"))
        return Metadata({"orders": Topic(self.leaders)})


def loop_over(consumer: AskingConsumer, states: FetchStates) -> CopyLoop:
    spec = copy_spec(
        transactional=True,
        partitions=[Assignment("orders", 0, "primary.orders", 10)],
        offsets_topic="mm2-offsets.primary.internal",
        settings=copy_settings(),
    )
    return CopyLoop(
        spec,
        consumer=cast(Any, consumer),
        alarm=AuthAlarm("primary"),
        sink=TransactionSink(
            spec, cast(Any, FakeProducer(producer_settings(spec))), AuthAlarm("b")
        ),
        syncs=OffsetSyncEmitter("", None, 100),
        offsets=None,
        fetch_states=states,
    )


def test_a_client_that_lost_a_leader_the_cluster_names_ends_the_copy_task() -> None:
    clock = Clock()
    states = FetchStates(clock)
    absent = AskingConsumer(None)  # the source is away: only waiting
    copier = loop_over(absent, states)
    states(led(orders_0=-1))
    clock.now += STUCK_S + 1
    copier._assign_stuck()
    leaderless = AskingConsumer({0: -1})  # the cluster answers, with no leader yet
    copier = loop_over(leaderless, states)
    clock.now += STUCK_S + 1
    copier._assign_stuck()
    beyond_repair = AskingConsumer({0: 1})  # the cluster names broker 1; the client does not
    copier = loop_over(beyond_repair, states)
    clock.now += STUCK_S + 1
    with pytest.raises(KafkaClientError, match=r"orders-0 \(broker 1\).*new clients") as caught:
        copier._assign_stuck()
    assert caught.value.retriable
