"""Apache MM2's config names as data: client keys, the connectors' ConfigDef union, worker keys,
deprecated and secret names (their types and bounds are in mm2.config.value_types)."""

from __future__ import annotations

__all__ = [
    "CLIENT_CONFIG_NAMES",
    "CONNECTOR_CLASSES",
    "CONNECTOR_CONFIG_NAMES",
    "DEPRECATED_NAMES",
    "MM1_NAMES",
    "PASSWORD_NAMES",
    "SCHEMA_REGISTRY_NAMES",
    "WORKER_NAMES",
]

SSL_CLIENT_NAMES = frozenset(
    {
        "ssl.protocol",
        "ssl.provider",
        "ssl.cipher.suites",
        "ssl.enabled.protocols",
        "ssl.keystore.type",
        "ssl.keystore.location",
        "ssl.keystore.password",
        "ssl.key.password",
        "ssl.keystore.key",
        "ssl.keystore.certificate.chain",
        "ssl.truststore.certificates",
        "ssl.truststore.type",
        "ssl.truststore.location",
        "ssl.truststore.password",
        "ssl.keymanager.algorithm",
        "ssl.trustmanager.algorithm",
        "ssl.endpoint.identification.algorithm",
        "ssl.secure.random.implementation",
        "ssl.engine.factory.class",
    }
)
SASL_CLIENT_NAMES = frozenset(
    {
        "sasl.mechanism",
        "sasl.jaas.config",
        "sasl.kerberos.service.name",
        "sasl.kerberos.kinit.cmd",
        "sasl.kerberos.ticket.renew.window.factor",
        "sasl.kerberos.ticket.renew.jitter",
        "sasl.kerberos.min.time.before.relogin",
        "sasl.login.refresh.window.factor",
        "sasl.login.refresh.window.jitter",
        "sasl.login.refresh.min.period.seconds",
        "sasl.login.refresh.buffer.seconds",
        "sasl.client.callback.handler.class",
        "sasl.login.callback.handler.class",
        "sasl.login.class",
        "sasl.login.connect.timeout.ms",
        "sasl.login.read.timeout.ms",
        "sasl.login.retry.backoff.max.ms",
        "sasl.login.retry.backoff.ms",
        "sasl.oauthbearer.scope.claim.name",
        "sasl.oauthbearer.sub.claim.name",
        "sasl.oauthbearer.token.endpoint.url",
        "sasl.oauthbearer.jwks.endpoint.url",
        "sasl.oauthbearer.jwks.endpoint.refresh.ms",
        "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms",
        "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms",
        "sasl.oauthbearer.clock.skew.seconds",
        "sasl.oauthbearer.expected.audience",
        "sasl.oauthbearer.expected.issuer",
        "sasl.oauthbearer.header.urlencode",
    }
)
# MirrorClientConfig.CLIENT_CONFIG_DEF: what clusterProps copies to producer./consumer./admin.
CLIENT_CONFIG_NAMES = frozenset(
    {"bootstrap.servers", "security.protocol"} | SSL_CLIENT_NAMES | SASL_CLIENT_NAMES
)

# Connect's ConnectorConfig.configDef(), which every MM2 connector ConfigDef extends.
_CONNECT_CONNECTOR_NAMES = {
    "name",
    "connector.class",
    "tasks.max",
    "tasks.max.enforce",
    "key.converter",
    "value.converter",
    "header.converter",
    "config.action.reload",
    "transforms",
    "predicates",
    "errors.retry.timeout",
    "errors.retry.delay.max.ms",
    "errors.tolerance",
    "errors.log.enable",
    "errors.log.include.messages",
    # SourceConnectorConfig (KIP-618)
    "exactly.once.support",
    "transaction.boundary",
    "transaction.boundary.interval.ms",
    "offsets.storage.topic",
}
_MIRROR_BASE_NAMES = {
    "enabled",
    "source.cluster.alias",
    "target.cluster.alias",
    "admin.timeout.ms",
    "replication.policy.class",
    "replication.policy.separator",
    "replication.policy.internal.topic.separator.enabled",
    "forwarding.admin.class",
    "metric.reporters",
    "add.source.alias.to.metrics",
    "security.protocol",
}
_SOURCE_NAMES = {
    "topics",
    "topics.exclude",
    "topics.blacklist",
    "config.properties.exclude",
    "config.properties.blacklist",
    "topic.filter.class",
    "config.property.filter.class",
    "consumer.poll.timeout.ms",
    "refresh.topics.enabled",
    "refresh.topics.interval.seconds",
    "sync.topic.configs.enabled",
    "sync.topic.configs.interval.seconds",
    "sync.topic.acls.enabled",
    "sync.topic.acls.interval.seconds",
    "replication.factor",
    "offset-syncs.topic.replication.factor",
    "offset.lag.max",
    "offset-syncs.topic.location",
    "emit.offset-syncs.enabled",
    "heartbeats.replication.enabled",
    "use.incremental.alter.configs",
    "task.assigned.partitions",
    "task.index",
    "metric.names.formats",  # KIP-1280 (Kafka 4.3): mm2.api.apache_metrics
}
_CHECKPOINT_NAMES = {
    "groups",
    "groups.exclude",
    "groups.blacklist",
    "group.filter.class",
    # KIP-1378: the name a group has on the target (mm2.policies.group_mirroring)
    "group.mirroring.policy.class",
    "topic.filter.class",
    "topics",
    "topics.exclude",
    "topics.blacklist",
    "consumer.poll.timeout.ms",
    "refresh.groups.enabled",
    "refresh.groups.interval.seconds",
    "emit.checkpoints.enabled",
    "emit.checkpoints.interval.seconds",
    "sync.group.offsets.enabled",
    "sync.group.offsets.interval.seconds",
    # ours: share groups' start offsets (KIP-932), mm2.share_groups
    "sync.share.group.offsets.enabled",
    "sync.share.group.offsets.interval.seconds",
    "checkpoints.topic.replication.factor",
    "offset-syncs.topic.location",
    "emit.offset-syncs.enabled",
    "task.assigned.groups",
    "task.index",
    "metric.names.formats",
}
_HEARTBEAT_NAMES = {
    "emit.heartbeats.enabled",
    "emit.heartbeats.interval.seconds",
    "heartbeats.topic.replication.factor",
}
# Ours: MirrorSchemaConnector's keys (mm2.connectors.schema), a flow's Schema Registry sync.
_SCHEMA_NAMES = {
    "schemas",
    "schemas.exclude",
    "sync.schemas.enabled",
    "sync.schemas.interval.seconds",
    "schema.ids.keys",
    "schema.ids.values",
    "schema.ids.wait.ms",
    "key.subject.name.strategy",
    "value.subject.name.strategy",
}
# Ours: a cluster's Schema Registry (`<alias>.schema.registry.url`, ...), Confluent's client
# keys under the `schema.registry.` prefix (mm2.schemas.settings); both registries of a flow set
# turn its schema connector on.
SCHEMA_REGISTRY_NAMES = frozenset(
    {
        "schema.registry.url",
        "schema.registry.basic.auth.credentials.source",
        "schema.registry.basic.auth.user.info",
        "schema.registry.ssl.ca.location",
        "schema.registry.ssl.certificate.location",
        "schema.registry.ssl.key.location",
        "schema.registry.ssl.key.password",
        "schema.registry.requests.per.second",
        "schema.registry.timeout.ms",
    }
)
# Connect worker keys (DistributedConfig) that mm2's connectors act on: its source task keeps
# the offsets topic, as Apache's worker does. Apache's worker reads them from `<target>.*` and
# (offset.storage.*) the top level, and MirrorMakerConfig keeps them out of the connector
# configs; mm2 also reads a top-level exactly.once.source.support and `<source>-><target>.*`.
WORKER_NAMES = frozenset(
    {
        "exactly.once.source.support",
        "offset.storage.topic",
        "offset.storage.partitions",
        "offset.storage.replication.factor",
    }
)
# Apache's Connect worker keys for its own internal topics (DistributedConfig), which the
# seed tutorials set per cluster (`backup.config.storage.replication.factor = 1`): real keys that
# mm2 has no use for (it keeps no Connect config or status topic), so no "did you mean".
CONNECT_STORAGE_NAMES = frozenset(
    {
        "config.storage.topic",
        "config.storage.replication.factor",
        "status.storage.topic",
        "status.storage.partitions",
        "status.storage.replication.factor",
    }
)
# Ours, not Apache's: where state lives and how the Spark pipeline runs, plus the worker keys
# above (checked wherever they are set).
MM2_NAMES = frozenset(
    WORKER_NAMES
    | SCHEMA_REGISTRY_NAMES
    | {
        "mm2.state.dir",
        "skip.oversized.records",
        # A source consumer group that follows the flow's positions (MirrorMaker 1's lag view).
        "progress.group.id",
        "progress.group.commit.interval.ms",
        # The micro-batch pipeline's keys: accepted, so older files still load, and unused
        # since copy tasks stream.
        "pipeline.trigger.interval.ms",
        "pipeline.max.records.per.partition",
    }
)
# MirrorMakerConfig.allConfigNames() (plus ours): top-level keys outside it never reach a connector.
CONNECTOR_CONFIG_NAMES = frozenset(
    (MM2_NAMES - WORKER_NAMES)
    | _CONNECT_CONNECTOR_NAMES
    | _MIRROR_BASE_NAMES
    | SSL_CLIENT_NAMES
    | SASL_CLIENT_NAMES
    | _SOURCE_NAMES
    | _CHECKPOINT_NAMES
    | _HEARTBEAT_NAMES
    | _SCHEMA_NAMES
)

_PKG = "org.apache.kafka.connect.mirror."
CONNECTOR_CLASSES: dict[str, str] = {
    "MirrorSourceConnector": _PKG + "MirrorSourceConnector",
    "MirrorCheckpointConnector": _PKG + "MirrorCheckpointConnector",
    "MirrorHeartbeatConnector": _PKG + "MirrorHeartbeatConnector",
    # ours: no Apache twin
    "MirrorSchemaConnector": "mm2.connectors.schema.MirrorSchemaConnector",
}

DEPRECATED_NAMES: dict[str, str] = {
    "topics.blacklist": "topics.exclude",
    "groups.blacklist": "groups.exclude",
    "config.properties.blacklist": "config.properties.exclude",
}

# MirrorMaker 1's options and keys, which mm2.properties does not read: what to write instead.
MM1_NAMES: dict[str, str] = {
    "whitelist": "topics",
    "include": "topics",
    "topics.whitelist": "topics",
    "mirror.topics.whitelist": "topics",
    "blacklist": "topics.exclude",
    "mirror.topics.blacklist": "topics.exclude",
    "groups.whitelist": "groups",
    "num.streams": "tasks.max",
    "offset.commit.interval.ms": "progress.group.commit.interval.ms",
    "abort.on.send.failure": "skip.oversized.records (its opposite)",
    "abort.on.send.fail": "skip.oversized.records (its opposite)",
}

# ConfigDef PASSWORD types: printed as [hidden], whatever prefix they carry.
PASSWORD_NAMES = frozenset(
    {
        "ssl.key.password",
        "ssl.keystore.password",
        "ssl.truststore.password",
        "ssl.keystore.key",
        "ssl.truststore.certificates",
        "sasl.jaas.config",
        "sasl.password",
        "sasl.oauthbearer.client.secret",
        "basic.auth.user.info",
    }
)
