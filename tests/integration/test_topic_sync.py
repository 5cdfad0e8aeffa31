"""TopicSync and TopicAdmin against real brokers: primary -> backup topics, partitions, configs."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient

from mm2.config import load
from mm2.connectors.topic_sync import TopicSync
from mm2.copy.routes import Route
from mm2.errors import KafkaClientError
from mm2.kafka.topics import ConfigOp, NewTopicSpec, TopicAdmin
from tests.support.kafka import Cluster
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

T = TypeVar("T")


def create_topic(
    cluster: Cluster, name: str, *, partitions: int = 1, config: dict[str, str] | None = None
) -> str:
    """Create `name` (the tests need exact names, e.g. `backup.<uuid>` for a cycle)."""
    spec = NewTopicSpec(name, partitions, 1, config or {})
    assert TopicAdmin(cluster.client_config()).create_topics([spec]) == {name: "created"}
    return name


@pytest.fixture
def prefix() -> str:
    return f"ts{uuid.uuid4().hex[:12]}"


@pytest.fixture
def make_sync(tmp_path: Path, primary: Cluster, backup: Cluster) -> Callable[..., TopicSync]:
    """`make_sync(topics=..., **flow_settings)` -> a TopicSync for primary->backup."""

    def make(*, acl_recheck_seconds: float = 60.0, **settings: str) -> TopicSync:
        # Other tests share these clusters and leave a `heartbeats` topic on primary, which is
        # always mirrored unless this is off; only the heartbeats test turns it back on.
        settings.setdefault("heartbeats_replication_enabled", "false")
        lines = [
            "clusters = primary, backup",
            f"primary.bootstrap.servers = {primary.bootstrap_servers}",
            f"backup.bootstrap.servers = {backup.bootstrap_servers}",
            "primary->backup.enabled = true",
            "replication.factor = 1",
            *(f"primary->backup.{k.replace('_', '.')} = {v}" for k, v in settings.items()),
        ]
        path = tmp_path / f"mm2-{uuid.uuid4().hex[:6]}.properties"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        flow = load(path).flow("primary", "backup")
        return TopicSync(
            flow,
            TopicAdmin(flow.source_admin_config()),
            TopicAdmin(flow.target_admin_config()),
            acl_recheck_seconds=acl_recheck_seconds,
        )

    return make


def configs_of(cluster: Cluster, topic: str) -> dict[str, str | None]:
    described = TopicAdmin(cluster.client_config()).describe_topic_configs([topic])
    return {e.name: e.value for e in described[topic]}


def alter(cluster: Cluster, topic: str, *ops: ConfigOp) -> None:
    failures = TopicAdmin(cluster.client_config()).incremental_alter_configs({topic: ops})
    assert not failures


def test_new_topic_appears_with_partitions_and_filtered_configs(
    make_sync: Callable[..., TopicSync], primary: Cluster, backup: Cluster, prefix: str
) -> None:
    topic = create_topic(
        primary,
        f"{prefix}-a",
        partitions=3,
        config={
            "retention.ms": "123456",
            "cleanup.policy": "compact",
            "message.timestamp.type": "LogAppendTime",  # excluded by default
        },
    )
    sync = make_sync(topics=f"{prefix}.*")
    routes = eventually(
        lambda: sync.refresh_topics().get(topic),
        timeout=30,
        interval=0.3,
        what=f"a route for {topic}",
    )
    assert (routes.target_topic, routes.partitions) == (f"primary.{topic}", 3)
    assert TopicAdmin(backup.client_config()).list_topics()[f"primary.{topic}"] == 3
    remote = configs_of(backup, f"primary.{topic}")
    assert remote["retention.ms"] == "123456"
    assert remote["cleanup.policy"] == "compact"
    assert remote["message.timestamp.type"] == "CreateTime"  # the target's default


def test_partition_increase_propagates(
    make_sync: Callable[..., TopicSync], primary: Cluster, backup: Cluster, prefix: str
) -> None:
    topic = create_topic(primary, f"{prefix}-b", partitions=1)
    sync = make_sync(topics=f"{prefix}.*")
    eventually(
        lambda: sync.refresh_topics().get(topic),
        timeout=30,
        interval=0.3,
        what=f"a route for {topic}",
    )
    assert not TopicAdmin(primary.client_config()).increase_partitions({topic: 3})

    def grown() -> Route | None:
        route = sync.refresh_topics().get(topic)
        return route if route is not None and route.partitions == 3 else None

    eventually(grown, timeout=30, interval=0.3, what=f"{topic} grown to 3 partitions")
    assert TopicAdmin(backup.client_config()).list_topics()[f"primary.{topic}"] == 3
    # never decreases, and asking for fewer partitions than there are is not a failure
    assert not TopicAdmin(backup.client_config()).increase_partitions({f"primary.{topic}": 2})
    assert TopicAdmin(backup.client_config()).list_topics()[f"primary.{topic}"] == 3


def test_config_change_propagates_and_excluded_target_edit_survives(
    make_sync: Callable[..., TopicSync], primary: Cluster, backup: Cluster, prefix: str
) -> None:
    topic = create_topic(primary, f"{prefix}-c", config={"retention.ms": "1000000"})
    remote = f"primary.{topic}"
    sync = make_sync(topics=f"{prefix}.*")
    eventually(
        lambda: sync.refresh_topics().get(topic),
        timeout=30,
        interval=0.3,
        what=f"a route for {topic}",
    )
    assert sync.sync_configs() == 1
    assert sync.sync_configs() == 0  # nothing changed: no AlterConfigs request
    alter(backup, remote, ConfigOp("message.timestamp.type", "SET", "LogAppendTime"))  # excluded
    alter(backup, remote, ConfigOp("segment.ms", "SET", "7777777"))  # a source default
    alter(primary, topic, ConfigOp("retention.ms", "SET", "2000000"))
    eventually(lambda: sync.sync_configs() == 1, timeout=30, interval=0.3, what="one config sync")
    after = configs_of(backup, remote)
    assert after["retention.ms"] == "2000000"
    assert after["message.timestamp.type"] == "LogAppendTime"  # never synced, so it survives
    assert after["segment.ms"] == configs_of(primary, topic)["segment.ms"]  # DELETE -> default


def test_use_defaults_from_source_sets_defaults(
    make_sync: Callable[..., TopicSync], primary: Cluster, backup: Cluster, prefix: str
) -> None:
    topic = create_topic(primary, f"{prefix}-s")
    remote = f"primary.{topic}"
    sync = make_sync(topics=f"{prefix}.*", use_defaults_from="source")
    eventually(
        lambda: sync.refresh_topics().get(topic),
        timeout=30,
        interval=0.3,
        what=f"a route for {topic}",
    )
    assert sync.sync_configs() == 1
    described = TopicAdmin(backup.client_config()).describe_topic_configs([remote])[remote]
    retention = next(e for e in described if e.name == "retention.ms")
    assert retention.source == "DYNAMIC_TOPIC_CONFIG"  # SET from the source's default


def test_cycles_and_internal_topics_are_not_mirrored(
    make_sync: Callable[..., TopicSync], primary: Cluster, backup: Cluster, prefix: str
) -> None:
    ok = create_topic(primary, f"{prefix}-ok")
    skipped = [
        create_topic(primary, f"backup.{prefix}-d"),  # came from backup: a cycle
        create_topic(primary, f"mm2-offset-syncs.{prefix}.internal"),
        create_topic(primary, f"{prefix}-x-internal"),
        create_topic(primary, f"__{prefix}"),
    ]
    # __consumer_offsets exists once a group has committed
    admin = AdminClient({**primary.client_config()})
    request = ConsumerGroupTopicPartitions(f"g-{prefix}", [TopicPartition(ok, 0, 0)])
    admin.alter_consumer_group_offsets([request])[request.group_id].result(timeout=60)
    assert "__consumer_offsets" in TopicAdmin(primary.client_config()).list_topics(
        include_internal=True
    )
    assert "__consumer_offsets" not in TopicAdmin(primary.client_config()).list_topics()
    # a filter that lets all of them through: only the internal/cycle rules can stop them
    sync = make_sync(topics=f".*{prefix}.*, __consumer_offsets", topics_exclude="")

    def routed() -> dict[str, Route] | None:
        routes = sync.refresh_topics()
        return routes if ok in routes else None

    assert set(eventually(routed, timeout=30, interval=0.3, what="the routes")) == {ok}
    on_backup = TopicAdmin(backup.client_config()).list_topics(include_internal=True)
    for topic in [*skipped, "__consumer_offsets"]:
        assert f"primary.{topic}" not in on_backup


def test_heartbeats_mirrored_even_when_the_filter_rejects_them(
    make_sync: Callable[..., TopicSync], primary: Cluster, backup: Cluster, prefix: str
) -> None:
    # an upstream cluster's heartbeats (original topic "heartbeats"), uuid-named for isolation
    heartbeats = create_topic(primary, f"{prefix}.heartbeats")
    off = make_sync(topics="nothing-matches", heartbeats_replication_enabled="false")
    assert heartbeats not in off.refresh_topics()
    assert f"primary.{heartbeats}" not in TopicAdmin(backup.client_config()).list_topics()
    sync = make_sync(topics="nothing-matches", heartbeats_replication_enabled="true")
    route = eventually(
        lambda: sync.refresh_topics().get(heartbeats),
        timeout=30,
        interval=0.3,
        what=f"a route for {heartbeats}",
    )
    assert route.target_topic == f"primary.{heartbeats}"


def test_no_authorizer_skips_acl_sync_and_logs_once(
    make_sync: Callable[..., TopicSync],
    primary: Cluster,
    caplog: pytest.LogCaptureFixture,
    prefix: str,
) -> None:
    assert TopicAdmin(primary.client_config()).describe_topic_acls() is None
    sync = make_sync(topics=f"{prefix}.*", acl_recheck_seconds=0)
    with caplog.at_level(logging.DEBUG, logger="mm2.connectors.topic_sync"):
        assert sync.sync_acls() == 0
        assert sync.sync_acls() == 0
    infos = [r for r in caplog.records if r.levelno == logging.INFO]
    assert len(infos) == 1
    assert "no ACL authorizer" in infos[0].message
    assert any("skipping" in r.message for r in caplog.records if r.levelno == logging.DEBUG)


def test_topic_admin_create_semantics(backup: Cluster, prefix: str) -> None:
    admin = TopicAdmin(backup.client_config())
    spec = NewTopicSpec(f"{prefix}-n", 2, -1, {"retention.ms": "5000"})
    bad = NewTopicSpec(f"{prefix}-bad", 1, 5)
    results = admin.create_topics([spec, bad])
    assert results[spec.name] == "created"
    failure = results[bad.name]
    assert isinstance(failure, KafkaClientError)
    assert "INVALID_REPLICATION_FACTOR" in str(failure)
    assert admin.create_topics([spec]) == {spec.name: "exists"}
    internal = f"mm2-offset-syncs.{prefix}.internal"
    assert admin.create_compacted_topic(internal, replication_factor=1) is True
    assert admin.create_compacted_topic(internal, replication_factor=1) is False
    assert configs_of(backup, internal)["cleanup.policy"] == "compact"
    with pytest.raises(KafkaClientError):
        admin.create_compacted_topic(f"{prefix}-rf", replication_factor=5)
