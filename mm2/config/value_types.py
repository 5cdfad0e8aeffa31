"""Apache MM2's config keys by ConfigDef type, with their validators' bounds and choices: what
mm2 checks each value of mm2.properties against (mm2.config.values), as Apache's ConfigDefs do.
The names themselves are in mm2.config.names."""

from __future__ import annotations

from typing import Literal

__all__ = ["ALSO", "BOUNDS", "CASE_SENSITIVE", "SECURITY_PROTOCOLS", "TYPES", "ValueType"]

# "list" of the connector keys is a list of Java regexes (topics, groups); choices are tuples.
ValueType = (
    Literal["boolean", "short", "int", "long", "double", "list", "class", "string", "password"]
    | tuple[str, ...]
)

_BOOLEANS = (
    "enabled",
    "emit.heartbeats.enabled",
    "emit.checkpoints.enabled",
    "emit.offset-syncs.enabled",
    "refresh.topics.enabled",
    "refresh.groups.enabled",
    "sync.topic.configs.enabled",
    "sync.topic.acls.enabled",
    "sync.group.offsets.enabled",
    "sync.share.group.offsets.enabled",
    "heartbeats.replication.enabled",
    "replication.policy.internal.topic.separator.enabled",
    "add.source.alias.to.metrics",
    "errors.log.enable",
    "errors.log.include.messages",
    "tasks.max.enforce",
    "dedicated.mode.enable.internal.rest",
    "skip.oversized.records",
    "sync.schemas.enabled",
    "schema.ids.keys",
    "schema.ids.values",
)
_INTS = ("tasks.max", "replication.factor", "offset.storage.partitions")
_SHORTS = (
    "offset-syncs.topic.replication.factor",
    "checkpoints.topic.replication.factor",
    "heartbeats.topic.replication.factor",
    "offset.storage.replication.factor",
)
_LONGS = (
    "refresh.topics.interval.seconds",
    "refresh.groups.interval.seconds",
    "sync.topic.configs.interval.seconds",
    "sync.topic.acls.interval.seconds",
    "emit.checkpoints.interval.seconds",
    "emit.heartbeats.interval.seconds",
    "sync.group.offsets.interval.seconds",
    "sync.share.group.offsets.interval.seconds",
    "offset.lag.max",
    "consumer.poll.timeout.ms",
    "admin.timeout.ms",
    "errors.retry.timeout",
    "errors.retry.delay.max.ms",
    "pipeline.trigger.interval.ms",
    "pipeline.max.records.per.partition",
    "transaction.boundary.interval.ms",
    "progress.group.commit.interval.ms",
    "sync.schemas.interval.seconds",
    "schema.registry.timeout.ms",
    "schema.ids.wait.ms",
)
_LISTS = (
    "topics",
    "topics.exclude",
    "topics.blacklist",
    "groups",
    "groups.exclude",
    "groups.blacklist",
    "config.properties.exclude",
    "config.properties.blacklist",
    "schemas",
    "schemas.exclude",
)
_CLASSES = (
    "replication.policy.class",
    "topic.filter.class",
    "group.filter.class",
    "group.mirroring.policy.class",
    "config.property.filter.class",
)
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")

# ConfigDef types of the connector and top-level settings we validate (as Apache's ConfigDefs do).
TYPES: dict[str, ValueType] = {
    **dict.fromkeys(_BOOLEANS, "boolean"),
    **dict.fromkeys(_INTS, "int"),
    **dict.fromkeys(_SHORTS, "short"),
    **dict.fromkeys(_LONGS, "long"),
    **dict.fromkeys(_LISTS, "list"),
    **dict.fromkeys(_CLASSES, "class"),
    "schema.registry.requests.per.second": "double",
    "schema.registry.basic.auth.credentials.source": ("USER_INFO", "URL"),
    "offset-syncs.topic.location": ("source", "target"),
    "metric.names.formats": "list",  # of METRIC_NAMES_FORMATS (mm2.config.values)
    "exactly.once.source.support": ("disabled", "preparing", "enabled"),
    "exactly.once.support": ("requested", "required"),
    "transaction.boundary": ("poll", "interval", "connector"),
    "use.defaults.from": ("source", "target"),
    "errors.tolerance": ("none", "all"),
    "config.action.reload": ("none", "restart"),
    "use.incremental.alter.configs": ("requested", "required", "never"),
    "security.protocol": SECURITY_PROTOCOLS,
}
# Inclusive numeric bounds of ConfigDef validators (Connect's tasks.max is at least 1).
BOUNDS: dict[str, tuple[float | None, float | None]] = {
    "tasks.max": (1, None),
    "progress.group.commit.interval.ms": (0, None),
    "offset.storage.partitions": (1, None),
    "offset.storage.replication.factor": (1, None),
    "schema.registry.requests.per.second": (0, None),
    "schema.registry.timeout.ms": (1, None),
    "schema.ids.wait.ms": (0, None),
}
# Values a validator accepts outside its bounds (-1: the broker's default replication factor).
ALSO: dict[str, tuple[str, ...]] = {"offset.storage.replication.factor": ("-1",)}
# Choices Apache compares case-sensitively (ConfigDef.ValidString); the others ignore case.
CASE_SENSITIVE = frozenset(
    {"offset-syncs.topic.location", "errors.tolerance", "config.action.reload"}
)
