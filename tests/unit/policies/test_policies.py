"""Policy vectors from Apache ReplicationPolicyTest, MirrorClientTest, MirrorSourceConnectorTest."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mm2.policies.replication import (
    DefaultReplicationPolicy,
    IdentityReplicationPolicy,
    PolicyConfigError,
    is_cycle,
    load_replication_policy,
)


def test_internal_topics() -> None:
    p = DefaultReplicationPolicy()
    for t in ("__consumer_offsets", ".hidden", "mm2-offset-syncs.a.internal", "x-internal"):
        assert p.is_internal_topic(t)
    assert not p.is_internal_topic("a_b_internal")
    assert not p.is_internal_topic("orders")


@pytest.mark.parametrize(
    ("flag", "syncs", "checkpoints"),
    [
        ("true", "mm2-offset-syncs__CLUSTER__internal", "CLUSTER__checkpoints__internal"),
        ("false", "mm2-offset-syncs.CLUSTER.internal", "CLUSTER.checkpoints.internal"),
    ],
)
def test_internal_separator_flag(flag: str, syncs: str, checkpoints: str) -> None:
    p = load_replication_policy(
        {
            "replication.policy.separator": "__",
            "replication.policy.internal.topic.separator.enabled": flag,
        }
    )
    assert p.offset_syncs_topic("CLUSTER") == syncs
    assert p.checkpoints_topic("CLUSTER") == checkpoints
    assert p.heartbeats_topic() == "heartbeats"
    assert p.is_checkpoints_topic(checkpoints)


def test_flag_ignored_without_separator() -> None:
    p = load_replication_policy({"replication.policy.internal.topic.separator.enabled": "false"})
    assert p.offset_syncs_topic("a") == "mm2-offset-syncs.a.internal"


def test_java_split_quirks() -> None:
    p = DefaultReplicationPolicy()
    assert p.topic_source("a.") is None
    assert p.topic_source(".b") == ""
    assert p.upstream_topic(".b") == "b"
    assert p.topic_source("topic") is None
    assert p.upstream_topic("source1.topic1") == "topic1"
    assert p.original_topic("source2.source1.topic") == "topic"


def test_heartbeat_and_checkpoint_topic_names() -> None:
    p = DefaultReplicationPolicy()
    assert p.is_heartbeats_topic("heartbeats")
    assert p.is_heartbeats_topic("source1.heartbeats")
    assert p.is_heartbeats_topic("source2.source1.heartbeats")
    assert not p.is_heartbeats_topic("heartbeats!")
    assert not p.is_heartbeats_topic("source1-heartbeats")
    assert p.is_checkpoints_topic("source1.checkpoints.internal")
    assert not p.is_checkpoints_topic("checkpoints.internal")
    assert not p.is_checkpoints_topic("checkpoints-internal")


def test_custom_separator_names() -> None:
    p = load_replication_policy({"replication.policy.separator": "__"})
    assert p.format_remote_topic("b", "topic1") == "b__topic1"
    assert p.topic_source("source1__topic") == "source1"
    assert p.topic_source("source1.topic") is None


def test_no_cycles() -> None:
    p = DefaultReplicationPolicy()
    assert is_cycle(p, "target.topic1", "target")
    assert is_cycle(p, "target.source.topic1", "target")
    assert is_cycle(p, "source.target.topic1", "target")
    assert not is_cycle(p, "source.topic1", "target")
    assert not is_cycle(p, "topic1", "target")


def test_is_cycle_with_null_upstream_topic() -> None:
    assert not is_cycle(DefaultReplicationPolicy(), ".b", "target")


def test_identity_replication() -> None:
    p = load_replication_policy(
        {
            "replication.policy.class": "org.apache.kafka.connect.mirror.IdentityReplicationPolicy",
            "source.cluster.alias": "source",
        }
    )
    assert isinstance(p, IdentityReplicationPolicy)
    assert p.format_remote_topic("source", "topic1") == "topic1"
    assert p.format_remote_topic("source", "heartbeats") == "source.heartbeats"
    assert p.topic_source("topic1") == "source"
    assert p.original_topic("topic1") == "topic1"
    assert not is_cycle(p, "target.topic1", "target")  # Identity cannot see it
    assert is_cycle(p, "target.heartbeats", "target")
    assert is_cycle(p, "source.target.heartbeats", "target")


def test_identity_without_alias_has_no_source() -> None:
    assert IdentityReplicationPolicy().topic_source("topic1") is None


def test_custom_policy_by_dotted_path() -> None:
    p = load_replication_policy(
        {"replication.policy.class": "mm2.policies.replication.IdentityReplicationPolicy"}
    )
    assert isinstance(p, IdentityReplicationPolicy)
    # the paths of releases before the package moved under mm2 still name the built-ins
    old = load_replication_policy(
        {"replication.policy.class": "policies.replication.IdentityReplicationPolicy"}
    )
    assert isinstance(old, IdentityReplicationPolicy)
    with pytest.raises(PolicyConfigError) as err:
        load_replication_policy({"replication.policy.class": "com.acme.MyPolicy"})
    assert err.value.key == "replication.policy.class"
    assert "Java class" in str(err.value)
    with pytest.raises(PolicyConfigError):
        load_replication_policy(
            {"replication.policy.class": "mm2.policies.filter.DefaultTopicFilter"}
        )


ALIAS = st.from_regex(r"[A-Za-z0-9_-]{1,12}", fullmatch=True)
TOPIC = st.from_regex(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,30}", fullmatch=True)


@given(ALIAS, TOPIC)
def test_round_trip(source: str, topic: str) -> None:
    p = DefaultReplicationPolicy()
    remote = p.format_remote_topic(source, topic)
    assert p.topic_source(remote) == source
    if not topic.endswith("."):
        assert p.upstream_topic(remote) == topic


@given(
    st.lists(ALIAS, min_size=1, max_size=5), st.from_regex(r"[A-Za-z0-9_-]{1,20}", fullmatch=True)
)
def test_multi_hop_original_topic(hops: list[str], topic: str) -> None:
    p = DefaultReplicationPolicy()
    name = topic
    for alias in hops:
        name = p.format_remote_topic(alias, name)
    assert p.original_topic(name) == topic
    assert is_cycle(p, name, hops[0])
