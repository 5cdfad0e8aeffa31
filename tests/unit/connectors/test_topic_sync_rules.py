"""MirrorSourceConnector's control-plane rules, with MirrorSourceConnectorTest's vectors."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence

import pytest

from mm2.config.model import Flow
from mm2.connectors import topic_sync
from mm2.connectors.topic_rules import (
    acl_bindings_to_sync,
    config_ops,
    new_topic_configs,
    plan_topics,
    should_replicate_acl,
    should_replicate_topic,
    target_acl_binding,
    target_config,
)
from mm2.connectors.topic_sync import TopicSync
from mm2.copy.routes import Route
from mm2.errors import KafkaClientError
from mm2.kafka.acls import AclBinding, AclOperationName, AclPermission
from mm2.kafka.topics import (
    ConfigOp,
    CreateOutcome,
    NewTopicSpec,
    TopicAdmin,
    TopicConfigEntry,
)
from mm2.policies.filter import DefaultConfigPropertyFilter, DefaultTopicFilter, TopicFilter
from mm2.policies.replication import (
    DefaultReplicationPolicy,
    IdentityReplicationPolicy,
    ReplicationPolicy,
    is_cycle,
)


class _All(TopicFilter):
    def should_replicate_topic(self, topic: str) -> bool:
        return True


class _Nothing(TopicFilter):
    def should_replicate_topic(self, topic: str) -> bool:
        return False


def _replicates(
    topic: str,
    policy: ReplicationPolicy | None = None,
    topic_filter: TopicFilter | None = None,
    heartbeats: bool = True,
) -> bool:
    return should_replicate_topic(
        topic,
        policy=policy or DefaultReplicationPolicy(),
        topic_filter=topic_filter or _All(),
        target_alias="target",
        heartbeats_replication=heartbeats,
    )


# -- shouldReplicateTopic ----------------------------------------------------------------------


def test_no_cycles() -> None:  # testNoCycles
    for topic in (
        "target.topic1",
        "target.source.topic1",
        "source.target.topic1",
        "target.source.target.topic1",
        "source.target.source.topic1",
    ):
        assert not _replicates(topic), topic
    assert _replicates("topic1")
    assert _replicates("source.topic1")


def test_identity_replication() -> None:  # testIdentityReplication
    identity = IdentityReplicationPolicy()
    for topic in (
        "target.topic1",
        "target.source.topic1",
        "source.target.topic1",
        "target.source.target.topic1",
        "source.target.source.topic1",
        "topic1",
        "othersource.topic1",
        "heartbeats",
        "othersource.heartbeats",
    ):
        assert _replicates(topic, identity), topic
    for topic in (
        "target.heartbeats",
        "target.source.heartbeats",
        "source.target.heartbeats",
        "target.source.target.heartbeats",
        "source.target.source.heartbeats",
    ):
        assert not _replicates(topic, identity), topic


class _NoUpstream(DefaultReplicationPolicy):
    def upstream_topic(self, topic: str) -> str | None:
        return None


def test_cycle_with_null_upstream_topic() -> None:  # testIsCycleWithNullUpstreamTopic
    assert not is_cycle(DefaultReplicationPolicy(), ".b", "target")  # source "" upstream "b"
    assert _replicates("other.b", _NoUpstream())  # upstream null: the chain ends, no cycle
    assert not _replicates("target.b", _NoUpstream())
    assert not _replicates(".b")  # a leading dot is internal all the same


def test_heartbeats_replicated_despite_the_filter() -> None:
    assert _replicates("heartbeats", topic_filter=_Nothing())
    assert _replicates("us-west.heartbeats", topic_filter=_Nothing())
    assert not _replicates("orders", topic_filter=_Nothing())


def test_heartbeats_replication_disabled() -> None:
    assert not _replicates("heartbeats", topic_filter=_Nothing(), heartbeats=False)
    assert not _replicates("us-west.heartbeats", topic_filter=_Nothing(), heartbeats=False)
    # disabled, but the filter lets it through
    assert _replicates("heartbeats", topic_filter=_All(), heartbeats=False)


def test_internal_topics_never_replicated_even_if_the_filter_accepts() -> None:
    for topic in (
        "__consumer_offsets",
        "__transaction_state",
        "mm2-offset-syncs.backup.internal",
        "primary.checkpoints.internal",
        "mm2-configs.primary.internal",
        "x-internal",
        ".hidden",
    ):
        assert not _replicates(topic, topic_filter=_All()), topic


def test_default_filter_with_heartbeats_and_cycle() -> None:
    f = DefaultTopicFilter()
    f.configure({"topics": "orders.*"})
    assert _replicates("orders-1", topic_filter=f)
    assert not _replicates("payments", topic_filter=f)
    assert not _replicates("target.orders-1", topic_filter=f)  # cycle wins over the filter
    assert not _replicates("target.heartbeats", topic_filter=f)  # heartbeats cycle


# -- topics and partitions (refreshTopicPartitions / computeAndCreateTopicPartitions) ----------


def _remote(topic: str) -> str:
    return DefaultReplicationPolicy().format_remote_topic("source", topic)


def test_refresh_creates_missing_remote_topic_until_it_exists() -> None:
    plan = plan_topics({"topic": 1}, {}, _remote)
    assert dict(plan.create) == {"topic": 1}
    assert not plan.increase
    assert not plan.routes  # not ready until the remote exists
    # still missing on the next refresh: asked again (testRefreshTopicPartitions)
    assert dict(plan_topics({"topic": 1}, {}, _remote).create) == {"topic": 1}
    plan = plan_topics({"topic": 1}, {"source.topic": 1}, _remote)
    assert not plan.create
    assert not plan.increase
    assert dict(plan.routes) == {"topic": Route("topic", "source.topic", 1)}


def test_topic_on_target_first() -> None:  # testRefreshTopicPartitionsTopicOnTargetFirst
    plan = plan_topics({}, {"source.topic": 1}, _remote)
    assert (plan.create, plan.increase, plan.routes) == ({}, {}, {})
    plan = plan_topics({"topic": 1}, {"source.topic": 1}, _remote)
    assert not plan.create
    assert not plan.increase
    assert dict(plan.routes) == {"topic": Route("topic", "source.topic", 1)}


def test_partition_increase_propagates_and_never_decreases() -> None:
    plan = plan_topics({"topic": 4}, {"source.topic": 2}, _remote)
    assert dict(plan.increase) == {"source.topic": 4}
    # routed on the partitions both sides have until the target grows
    assert plan.routes["topic"] == Route("topic", "source.topic", 2)
    plan = plan_topics({"topic": 2}, {"source.topic": 4}, _remote)
    assert not plan.increase
    assert plan.routes["topic"] == Route("topic", "source.topic", 2)


def test_unrelated_target_topics_are_ignored() -> None:
    plan = plan_topics({"a": 1}, {"a": 3, "source.b": 1}, _remote)
    assert dict(plan.create) == {"a": 1}
    assert not plan.routes


# -- configs (targetConfig, incrementalAlterConfigs, DefaultConfigPropertyFilter) --------------


def _filter(**props: str) -> DefaultConfigPropertyFilter:
    f = DefaultConfigPropertyFilter()
    f.configure({k.replace("_", "."): v for k, v in props.items()})
    return f


ENTRIES = [
    TopicConfigEntry("name-1", "value-1"),
    TopicConfigEntry("name-2", "value-2", is_default=True, source="DEFAULT_CONFIG"),
    TopicConfigEntry("min.insync.replicas", "2"),
]


def _names(entries: Iterable[TopicConfigEntry]) -> set[str]:
    return {e.name for e in entries}


def test_config_property_filtering_incremental() -> None:  # testConfigPropertyFiltering
    assert _names(target_config(ENTRIES, _filter(), incremental=True)) == {"name-1", "name-2"}


def test_config_property_filtering_new_topic() -> None:  # ...WithAlterConfigs
    assert _names(target_config(ENTRIES, _filter(), incremental=False)) == {"name-1"}


def test_config_property_filtering_source_defaults() -> None:  # ...AndSourceDefault
    kept = target_config(ENTRIES, _filter(use_defaults_from="source"), incremental=False)
    assert _names(kept) == {"name-1", "name-2"}


def test_read_only_sensitive_and_static_broker_entries_dropped() -> None:
    entries = [
        TopicConfigEntry("retention.ms", "1000", source="DYNAMIC_TOPIC_CONFIG"),
        TopicConfigEntry("ro", "x", is_read_only=True),
        TopicConfigEntry("secret", None, is_sensitive=True),
        TopicConfigEntry("segment.bytes", "67108864", source="STATIC_BROKER_CONFIG"),
        TopicConfigEntry("flush.ms", "5", source="DYNAMIC_DEFAULT_BROKER_CONFIG"),
    ]
    for incremental in (True, False):
        kept = _names(target_config(entries, _filter(), incremental=incremental))
        assert kept == {"retention.ms", "flush.ms"}


def test_new_topic_configs_excluded_regex() -> None:  # testNewTopicConfigs
    f = _filter(
        config_properties_exclude="follower\\.replication\\.throttled\\.replicas, "
        "leader\\.replication\\.throttled\\.replicas, "
        "message\\.timestamp\\.difference\\.max\\.ms, "
        "message\\.timestamp\\.type, "
        "unclean\\.leader\\.election\\.enable, "
        "min\\.insync\\.replicas,"
        "exclude_param.*"
    )
    entries = [
        TopicConfigEntry("name-1", "value-1"),
        TopicConfigEntry("exclude_param.param1", "value-param1"),
        TopicConfigEntry("min.insync.replicas", "2"),
    ]
    assert new_topic_configs(entries, f) == {"name-1": "value-1"}


def test_new_topic_configs_of_refresh() -> None:  # testRefreshTopicPartitions' NewTopic configs
    entries = [
        TopicConfigEntry("cleanup.policy", "compact"),
        TopicConfigEntry("segment.bytes", "100"),
    ]
    assert new_topic_configs(entries, _filter()) == {
        "cleanup.policy": "compact",
        "segment.bytes": "100",
    }


def test_config_ops_delete_defaults_unless_source_defaults() -> None:
    assert config_ops(ENTRIES, _filter()) == (
        ConfigOp("name-1", "SET", "value-1"),
        ConfigOp("name-2", "DELETE"),
    )
    assert config_ops(ENTRIES, _filter(use_defaults_from="source")) == (
        ConfigOp("name-1", "SET", "value-1"),
        ConfigOp("name-2", "SET", "value-2"),
    )


def test_config_ops_are_order_independent() -> None:
    assert config_ops(reversed(ENTRIES), _filter()) == config_ops(ENTRIES, _filter())


# -- ACLs (testAclFiltering, testAclTransformation) --------------------------------------------


def _acl(
    operation: AclOperationName,
    permission: AclPermission,
    *,
    name: str = "test_topic",
    pattern: str = "LITERAL",
    resource: str = "TOPIC",
) -> AclBinding:
    return AclBinding(resource, name, pattern, "kafka", "", operation, permission)  # type: ignore[arg-type]


def test_acl_filtering() -> None:
    assert not should_replicate_acl(_acl("WRITE", "ALLOW"))
    assert should_replicate_acl(_acl("ALL", "ALLOW"))
    assert should_replicate_acl(_acl("WRITE", "DENY"))


def test_acl_transformation() -> None:
    allow_all = target_acl_binding(_acl("ALL", "ALLOW"), _remote("test_topic"))
    assert allow_all.name == "source.test_topic"
    assert allow_all.operation == "READ"
    assert allow_all.permission == "ALLOW"
    assert allow_all.pattern_type == "LITERAL"
    assert (allow_all.principal, allow_all.host) == ("kafka", "")
    deny_all = target_acl_binding(_acl("ALL", "DENY"), _remote("test_topic"))
    assert deny_all.operation == "ALL"
    assert deny_all.permission == "DENY"


def test_acl_bindings_to_sync_keeps_literal_topic_acls_of_replicated_topics() -> None:
    bindings = [
        _acl("READ", "ALLOW"),
        _acl("WRITE", "ALLOW"),  # MM2 is the only writer on the target
        _acl("READ", "ALLOW", pattern="PREFIXED"),
        _acl("READ", "ALLOW", resource="GROUP"),
        _acl("READ", "ALLOW", name="target.test_topic"),  # a cycle
        _acl("DESCRIBE", "DENY"),
    ]
    synced = acl_bindings_to_sync(bindings, lambda t: _replicates(t), _remote)
    assert synced == [
        AclBinding("TOPIC", "source.test_topic", "LITERAL", "kafka", "", "READ", "ALLOW"),
        AclBinding("TOPIC", "source.test_topic", "LITERAL", "kafka", "", "DESCRIBE", "DENY"),
    ]


# -- TopicSync over fake admins (what is called, how often, what is logged) ---------------------


class FakeAdmin(TopicAdmin):
    """A cluster in memory; records every call TopicSync makes."""

    def __init__(self, topics: dict[str, int] | None = None) -> None:  # no AdminClient
        self.topics: dict[str, int] = dict(topics or {})
        self.configs: dict[str, list[TopicConfigEntry]] = {}
        self.acls: list[AclBinding] | None = None
        self.calls: list[str] = []
        self.created: list[NewTopicSpec] = []
        self.altered: list[dict[str, tuple[ConfigOp, ...]]] = []
        self.acls_created: list[AclBinding] = []
        self.acl_failure: KafkaClientError | None = None
        self.ids: dict[str, str] = {}

    def list_topics(self, *, include_internal: bool = False) -> dict[str, int]:
        self.calls.append("list")
        return dict(self.topics)

    def topic_ids(self, topics: Iterable[str]) -> dict[str, str]:
        return {t: self.ids.get(t, f"id-{t}") for t in topics if t in self.topics}

    def create_topics(
        self, specs: Iterable[NewTopicSpec]
    ) -> dict[str, CreateOutcome | KafkaClientError]:
        self.calls.append("create")
        out: dict[str, CreateOutcome | KafkaClientError] = {}
        for s in specs:
            self.created.append(s)
            out[s.name] = "exists" if s.name in self.topics else "created"
            self.topics.setdefault(s.name, s.partitions)
        return out

    def increase_partitions(self, counts: Mapping[str, int]) -> dict[str, KafkaClientError]:
        self.calls.append("grow")
        self.topics.update(counts)
        return {}

    def describe_topic_configs(self, topics: Iterable[str]) -> dict[str, list[TopicConfigEntry]]:
        self.calls.append("describe")
        return {t: self.configs.get(t, []) for t in topics if t in self.topics}

    def incremental_alter_configs(
        self, ops: Mapping[str, Sequence[ConfigOp]]
    ) -> dict[str, KafkaClientError]:
        self.calls.append("alter")
        self.altered.append({k: tuple(v) for k, v in ops.items()})
        return {}

    def describe_topic_acls(self) -> list[AclBinding] | None:
        self.calls.append("describe-acls")
        return None if self.acls is None else list(self.acls)

    def create_acls(self, bindings: Sequence[AclBinding]) -> dict[AclBinding, KafkaClientError]:
        self.calls.append("create-acls")
        if self.acl_failure is not None:
            return dict.fromkeys(bindings, self.acl_failure)
        self.acls_created.extend(bindings)
        return {}


def _flow(**extra: str) -> Flow:
    props = {
        "source.cluster.alias": "primary",
        "target.cluster.alias": "backup",
        "enabled": "true",
        "replication.factor": "3",
        **{k.replace("_", "."): v for k, v in extra.items()},
    }
    return Flow.for_connector(props)


def _sync(source: FakeAdmin, target: FakeAdmin, **extra: str) -> tuple[TopicSync, list[float]]:
    now = [100.0]
    return TopicSync(_flow(**extra), source, target, clock=lambda: now[0]), now


def test_refresh_creates_with_configs_and_replication_factor(
    caplog: pytest.LogCaptureFixture,
) -> None:
    source = FakeAdmin({"orders": 3, "__consumer_offsets": 50, "backup.x": 1})
    source.configs["orders"] = [
        TopicConfigEntry("retention.ms", "1000", source="DYNAMIC_TOPIC_CONFIG"),
        TopicConfigEntry("min.insync.replicas", "2", source="DYNAMIC_TOPIC_CONFIG"),
        TopicConfigEntry("segment.ms", "1", is_default=True, source="DEFAULT_CONFIG"),
    ]
    target = FakeAdmin()
    sync, _ = _sync(source, target)
    with caplog.at_level(logging.INFO, logger="mm2.connectors.topic_sync"):
        routes = sync.refresh_topics()
    assert target.created == [NewTopicSpec("primary.orders", 3, 3, {"retention.ms": "1000"})]
    assert routes == {"orders": Route("orders", "primary.orders", 3, "id-orders")}  # at once
    created = [r for r in caplog.records if "created remote topic primary.orders" in r.message]
    assert len(created) == 1
    caplog.clear()
    target.calls.clear()
    assert sync.refresh_topics() == routes
    assert target.calls == ["list"]  # steady state: one metadata request per cluster
    assert not caplog.records


def test_refresh_grows_partitions_once() -> None:
    source = FakeAdmin({"orders": 2})
    target = FakeAdmin({"primary.orders": 1})
    sync, _ = _sync(source, target)
    sync.refresh_topics()
    assert target.topics["primary.orders"] == 2
    assert target.calls.count("grow") == 1
    sync.refresh_topics()
    assert target.calls.count("grow") == 1


class RefusingAdmin(FakeAdmin):
    """Refuses every topic (or those of refuse_only) with the same error."""

    refuse_only: set[str] | None = None

    def create_topics(
        self, specs: Iterable[NewTopicSpec]
    ) -> dict[str, CreateOutcome | KafkaClientError]:
        wanted = list(specs)
        refused = [s for s in wanted if self.refuse_only is None or s.name in self.refuse_only]
        out = super().create_topics([s for s in wanted if s not in refused])
        error = KafkaClientError("Quota exceeded (POLICY_VIOLATION)")
        return {**out, **{s.name: error for s in refused}}


def _info(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]


def test_a_thousand_new_topics_log_one_summary_line(caplog: pytest.LogCaptureFixture) -> None:
    source = FakeAdmin({f"t{i:04d}": 10 for i in range(1000)})
    target = FakeAdmin()
    sync, _ = _sync(source, target)
    with caplog.at_level(logging.INFO, logger="mm2.connectors.topic_sync"):
        routes = sync.refresh_topics()
    assert len(routes) == 1000
    assert len(target.created) == 1000
    (line,) = _info(caplog)
    assert "created 1000 remote topics on backup (10000 partitions in all)" in line
    assert "primary.t0000" in line and "995 more" in line
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="mm2.connectors.topic_sync"):
        source.topics.update({f"u{i}": 2 for i in range(10)})
        sync.refresh_topics()
    debug = [r for r in caplog.records if r.levelno == logging.DEBUG]
    assert len(debug) == 10  # each topic still named, at DEBUG
    assert len(_info(caplog)) == 1


def test_a_few_new_or_grown_topics_are_logged_one_by_one(
    caplog: pytest.LogCaptureFixture,
) -> None:
    source = FakeAdmin({"a": 1, "b": 1, "c": 4})
    target = FakeAdmin({"primary.c": 2})
    sync, _ = _sync(source, target)
    with caplog.at_level(logging.INFO, logger="mm2.connectors.topic_sync"):
        sync.refresh_topics()
    lines = sorted(_info(caplog))
    assert len(lines) == 3
    assert "created remote topic primary.a on backup with 1 partitions" in lines[0]
    assert "grew remote topic primary.c on backup with 4 partitions" in lines[2]


def test_many_refused_topics_warn_once_in_one_line(caplog: pytest.LogCaptureFixture) -> None:
    source = FakeAdmin({f"t{i}": 1 for i in range(50)})
    target = RefusingAdmin()
    sync, _ = _sync(source, target)
    with caplog.at_level(logging.WARNING, logger="mm2.connectors.topic_sync"):
        assert sync.refresh_topics() == {}
        assert sync.refresh_topics() == {}  # the same errors again: nothing new to say
    assert target.calls.count("create") == 2  # retried every pass
    (line,) = [r.getMessage() for r in caplog.records]
    assert "could not create remote topic 50 topics" in line
    assert "POLICY_VIOLATION" in line
    caplog.clear()
    source.topics["t0"] = 1
    target.refuse_only = {"primary.t0"}  # the others are created now
    with caplog.at_level(logging.WARNING, logger="mm2.connectors.topic_sync"):
        sync.refresh_topics()
    assert not caplog.records  # t0's error is unchanged: still not repeated


def test_sync_configs_skips_unchanged_and_resyncs_after_a_while() -> None:
    source = FakeAdmin({"orders": 1})
    source.configs["orders"] = [TopicConfigEntry("retention.ms", "1000")]
    target = FakeAdmin({"primary.orders": 1})
    sync, now = _sync(source, target)
    sync.refresh_topics()
    assert sync.sync_configs() == 1
    assert target.altered == [{"primary.orders": (ConfigOp("retention.ms", "SET", "1000"),)}]
    assert sync.sync_configs() == 0
    assert len(target.altered) == 1
    source.configs["orders"] = [TopicConfigEntry("retention.ms", "2000")]
    assert sync.sync_configs() == 1
    assert target.altered[-1] == {"primary.orders": (ConfigOp("retention.ms", "SET", "2000"),)}
    now[0] += 601  # Apache re-applies every interval, repairing edits made on the target
    assert sync.sync_configs() == 1
    assert len(target.altered) == 3


def test_sync_configs_only_for_topics_whose_remote_exists() -> None:
    source = FakeAdmin({"orders": 1})
    source.configs["orders"] = [TopicConfigEntry("retention.ms", "1000")]
    sync, _ = _sync(source, FakeAdmin())
    assert sync.sync_configs() == 0  # no refresh yet: nothing is routed
    assert "describe" not in source.calls


def test_sync_acls_without_authorizer_logs_once(caplog: pytest.LogCaptureFixture) -> None:
    source, target = FakeAdmin({"orders": 1}), FakeAdmin()
    sync, now = _sync(source, target)
    with caplog.at_level(logging.INFO, logger="mm2.connectors.topic_sync"):
        for _ in range(3):
            assert sync.sync_acls() == 0
            now[0] += 61  # past the recheck interval: the source is asked every time
    assert source.calls.count("describe-acls") == 3
    assert len([r for r in caplog.records if "no ACL authorizer" in r.message]) == 1
    assert not target.calls


def test_sync_acls_creates_transformed_bindings_once() -> None:
    source, target = FakeAdmin({"orders": 1}), FakeAdmin()
    source.acls = [
        AclBinding("TOPIC", "orders", "LITERAL", "User:a", "*", "ALL", "ALLOW"),
        AclBinding("TOPIC", "orders", "LITERAL", "User:a", "*", "WRITE", "ALLOW"),
    ]
    sync, _ = _sync(source, target)
    assert sync.sync_acls() == 1
    assert target.acls_created == [
        AclBinding("TOPIC", "primary.orders", "LITERAL", "User:a", "*", "READ", "ALLOW")
    ]
    assert sync.sync_acls() == 0
    assert target.calls.count("create-acls") == 1


def test_sync_acls_failures_warned_once(caplog: pytest.LogCaptureFixture) -> None:
    source, target = FakeAdmin({"orders": 1}), FakeAdmin()
    source.acls = [AclBinding("TOPIC", "orders", "LITERAL", "User:a", "*", "READ", "ALLOW")]
    target.acl_failure = KafkaClientError("No Authorizer is configured. (SECURITY_DISABLED)")
    sync, _ = _sync(source, target)
    with caplog.at_level(logging.WARNING, logger="mm2.connectors.topic_sync"):
        assert sync.sync_acls() == 0
        assert sync.sync_acls() == 0
    assert target.calls.count("create-acls") == 2  # retried, since nothing was created
    assert len(caplog.records) == 1


class LaggingMetadata(FakeAdmin):
    """A target whose metadata shows a topic only some listings after it was created, as a
    broker's does a moment after the controller created it."""

    def __init__(self, hidden_listings: int) -> None:
        super().__init__()
        self.hidden_listings = hidden_listings
        self.fresh: set[str] = set()

    def create_topics(
        self, specs: Iterable[NewTopicSpec]
    ) -> dict[str, CreateOutcome | KafkaClientError]:
        specs = list(specs)
        self.fresh |= {s.name for s in specs}
        return super().create_topics(specs)

    def list_topics(self, *, include_internal: bool = False) -> dict[str, int]:
        listed = super().list_topics()
        if self.fresh and self.hidden_listings > 0:
            self.hidden_listings -= 1
            return {t: n for t, n in listed.items() if t not in self.fresh}
        return listed


def test_a_topic_created_now_is_routed_in_the_same_pass_once_metadata_shows_it() -> None:
    target = LaggingMetadata(hidden_listings=3)
    sync, _ = _sync(FakeAdmin({"orders": 3}), target)
    assert sync.refresh_topics() == {"orders": Route("orders", "primary.orders", 3, "id-orders")}
    assert target.calls.count("create") == 1  # waited for metadata, did not create again


def test_the_wait_for_metadata_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(topic_sync, "CREATED_WAIT_S", 0.3)
    target = LaggingMetadata(hidden_listings=10_000)
    sync, _ = _sync(FakeAdmin({"orders": 3}), target)
    assert sync.refresh_topics() == {}  # routed by a later pass
    assert 2 <= target.calls.count("list") < 100


def test_routes_carry_the_source_topic_id_and_a_re_created_topic_shows_a_new_one() -> None:
    source = FakeAdmin({"orders": 3})
    source.ids = {"orders": "A"}
    sync, _ = _sync(source, FakeAdmin())
    assert sync.refresh_topics()["orders"].topic_id == "A"
    source.ids = {"orders": "B"}  # deleted and created again under the same name
    assert sync.refresh_topics()["orders"].topic_id == "B"


def test_remote_topic_limits_are_read_once_and_a_missing_one_not_at_every_poll() -> None:
    target = FakeAdmin({"primary.orders": 3})
    target.configs["primary.orders"] = [TopicConfigEntry("max.message.bytes", "512000")]
    sync, now = _sync(FakeAdmin({"orders": 3}), target)
    wanted = ["primary.orders", "primary.later"]
    assert sync.max_message_bytes(wanted) == {"primary.orders": 512_000}
    assert sync.max_message_bytes(wanted) == {"primary.orders": 512_000}
    assert target.calls.count("describe") == 1  # primary.later is not there: asked again later
    now[0] += 31
    target.topics["primary.later"] = 1
    target.configs["primary.later"] = [TopicConfigEntry("max.message.bytes", "100000")]
    assert sync.max_message_bytes(wanted) == {"primary.orders": 512_000, "primary.later": 100_000}
    assert target.calls.count("describe") == 2
