"""MirrorClient's pure rules on topic names, with the examples of Apache's MirrorClientTest."""

from __future__ import annotations

from mm2.client import topology
from mm2.policies.replication import (
    DefaultReplicationPolicy,
    IdentityReplicationPolicy,
    ReplicationPolicy,
)

DEFAULT = DefaultReplicationPolicy()


def test_heartbeat_topics_are_heartbeats_and_their_replicas() -> None:
    topics = [
        "topic1",
        "topic2",
        "heartbeats",
        "source1.heartbeats",
        "source2.source1.heartbeats",
        "source3.heartbeats",
        "source1-heartbeats",
        "heartbeats-x",
    ]
    assert topology.heartbeat_topics(DEFAULT, topics) == {
        "heartbeats",
        "source1.heartbeats",
        "source2.source1.heartbeats",
        "source3.heartbeats",
    }


def test_checkpoint_topics_need_an_alias() -> None:
    topics = [
        "topic1",
        "topic2",
        "checkpoints.internal",
        "source1.checkpoints.internal",
        "source2.source1.checkpoints.internal",
        "source3.checkpoints.internal",
    ]
    assert topology.checkpoint_topics(DEFAULT, topics) == {
        "source1.checkpoints.internal",
        "source2.source1.checkpoints.internal",
        "source3.checkpoints.internal",
    }


def test_replication_hops() -> None:
    topics = [
        "topic1",
        "topic2",
        "heartbeats",
        "source1.heartbeats",
        "source2.source1.heartbeats",
        "source3.heartbeats",
    ]
    assert topology.replication_hops(DEFAULT, topics, "source1") == 1
    assert topology.replication_hops(DEFAULT, topics, "source2") == 1
    assert topology.replication_hops(DEFAULT, topics, "source3") == 1
    assert topology.replication_hops(DEFAULT, topics, "source4") == -1
    assert topology.replication_hops(DEFAULT, ["source2.source1.heartbeats"], "source1") == 2
    assert topology.replication_hops(DEFAULT, [], "source1") == -1


def test_count_hops_follows_the_name() -> None:
    assert topology.count_hops(DEFAULT, "source2.source1.topic", "source1") == 2
    assert topology.count_hops(DEFAULT, "source2.source1.topic", "source2") == 1
    assert topology.count_hops(DEFAULT, "source1.topic", "source2") == -1
    assert topology.count_hops(DEFAULT, "topic", "source1") == -1


class _CyclicPolicy(DefaultReplicationPolicy):
    """A policy that names every topic as coming from `a` and keeps the name: a cycle."""

    def topic_source(self, topic: str) -> str | None:
        return "a"

    def upstream_topic(self, topic: str) -> str | None:
        return topic


def test_cycles_end_the_walk() -> None:
    policy: ReplicationPolicy = _CyclicPolicy()
    assert topology.count_hops(policy, "heartbeats", "b") == -1
    assert topology.sources_of(policy, "heartbeats") == {"a"}
    identity = IdentityReplicationPolicy("primary")
    assert topology.count_hops(identity, "orders", "backup") == -1
    assert topology.count_hops(identity, "orders", "primary") == 1


def test_upstream_clusters_are_every_source_along_heartbeats() -> None:
    topics = [
        "topic1",
        "topic2",
        "heartbeats",
        "source1.heartbeats",
        "source2.source1.heartbeats",
        "source3.source4.source5.heartbeats",
        "source6.topic1",
    ]
    assert topology.upstream_clusters(DEFAULT, topics) == {
        "source1",
        "source2",
        "source3",
        "source4",
        "source5",
    }
    assert topology.upstream_clusters(DEFAULT, ["topic1", "heartbeats"]) == set()


def test_remote_topics() -> None:
    topics = [
        "topic1",
        "topic2",
        "topic3",
        "source1.topic4",
        "source1.source2.topic5",
        "source3.source4.source5.topic6",
        "source1.checkpoints.internal",
        "source2.heartbeats",
        "__consumer_offsets",
    ]
    assert topology.remote_topics(DEFAULT, topics) == {
        "source1.topic4",
        "source1.source2.topic5",
        "source3.source4.source5.topic6",
        "source2.heartbeats",
    }
    assert topology.remote_topics(DEFAULT, topics, "source1") == {
        "source1.topic4",
        "source1.source2.topic5",
    }
    assert topology.remote_topics(DEFAULT, topics, "source5") == set()


def test_remote_topics_with_a_custom_separator() -> None:
    policy = DefaultReplicationPolicy("__")
    topics = ["topic1", "source1__topic4", "source1__source2__topic5", "source3.topic6"]
    assert topology.remote_topics(policy, topics) == {"source1__topic4", "source1__source2__topic5"}
    assert topology.replication_hops(policy, ["source2__source1__heartbeats"], "source1") == 2


def test_identity_policy_makes_every_non_internal_topic_remote() -> None:
    policy = IdentityReplicationPolicy("primary")
    topics = ["topic1", "topic2", "heartbeats", "primary.heartbeats", "x.internal"]
    assert topology.remote_topics(policy, topics) == {"topic1", "topic2", "primary.heartbeats"}
    assert topology.remote_topics(IdentityReplicationPolicy(), ["topic1"]) == set()
