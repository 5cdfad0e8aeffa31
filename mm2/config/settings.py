"""A flow's settings, typed once from its resolved config: every default of mm2's readers here.

Fields are named after the Kafka keys (`offset.lag.max` -> `offset_lag_max`) and grouped by
who reads them in Apache MM2: the three connectors and the Connect worker of the flow's herder
(and mm2's schema connector).
An interval is None when its `*.enabled` key is false: Apache's -1, "never".

    settings = flow.settings
    Every(settings.source.refresh_topics_interval_seconds)
    settings.worker.offset_storage_replication_factor
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, TypeVar, cast

from mm2.config.values import ValueProblem, parse_bool, parse_int
from mm2.errors import ConfigError
from mm2.records.schema_ids import SUBJECT_STRATEGIES

__all__ = [
    "APACHE_INTERVALS_S",
    "DEFAULT_INTERVALS_S",
    "DEFAULT_OFF",
    "DEFAULT_STATE_DIR",
    "CheckpointSettings",
    "FlowSettings",
    "HeartbeatSettings",
    "MirrorMakerSettings",
    "SchemaSettings",
    "SourceSettings",
    "WorkerSettings",
    "flow_settings",
    "mirror_maker_settings",
    "tasks_max",
]

OffsetSyncsTopicLocation = Literal["source", "target"]
ExactlyOnceSourceSupport = Literal["disabled", "preparing", "enabled"]
ExactlyOnceSupport = Literal["requested", "required"]

# Apache's interval defaults (APACHE_INTERVALS_S) are 600 s, 60 s for checkpoints and group
# offsets; metadata that takes ten minutes to reach the target is what operators complain
# about, so ours are seconds (an explicit setting still wins).
DEFAULT_INTERVALS_S = {
    "refresh.topics": 2,
    "sync.topic.configs": 3,
    "sync.topic.acls": 5,
    "refresh.groups": 2,
    "emit.checkpoints": 1,
    "sync.group.offsets": 1,
    "sync.share.group.offsets": 1,
    "emit.heartbeats": 1,
    "sync.schemas": 1,
}
# Apache MM2's defaults of the intervals it has (docs/configuration-reference.md shows them).
APACHE_INTERVALS_S = {
    "refresh.topics": 600,
    "sync.topic.configs": 600,
    "sync.topic.acls": 600,
    "refresh.groups": 600,
    "emit.checkpoints": 60,
    "sync.group.offsets": 60,
    "emit.heartbeats": 1,
}
# The `<name>.enabled` keys that are false unless set (Apache's default too).
# mm2.state.dir when the file does not set it (relative to the working directory).
DEFAULT_STATE_DIR = "mm2-state"
DEFAULT_OFF = frozenset({"sync.group.offsets", "sync.share.group.offsets"})


@dataclass(frozen=True)
class SourceSettings:
    """MirrorSourceConnector's keys (MirrorSourceConfig), plus mm2's own for its copy path."""

    tasks_max: int = 1
    offset_lag_max: int = 100
    replication_factor: int = 2
    refresh_topics_interval_seconds: int | None = DEFAULT_INTERVALS_S["refresh.topics"]
    sync_topic_configs_interval_seconds: int | None = DEFAULT_INTERVALS_S["sync.topic.configs"]
    sync_topic_acls_interval_seconds: int | None = DEFAULT_INTERVALS_S["sync.topic.acls"]
    heartbeats_replication_enabled: bool = True
    emit_offset_syncs_enabled: bool = True
    offset_syncs_topic_replication_factor: int = 3
    offset_syncs_topic_location: OffsetSyncsTopicLocation = "source"
    exactly_once_support: ExactlyOnceSupport = "requested"
    transaction_boundary_interval_ms: int = 100
    # Ours: a record larger than the target takes is skipped (logged) instead of failing the task.
    skip_oversized_records: bool = False
    # Ours: MirrorMaker 1's consumer group view of the flow's positions ("" = none).
    progress_group_id: str = ""
    progress_group_commit_interval_ms: int = 60_000
    # Ours: where a flow keeps local caches (never a position).
    mm2_state_dir: str = DEFAULT_STATE_DIR


@dataclass(frozen=True)
class CheckpointSettings:
    """MirrorCheckpointConnector's keys (MirrorCheckpointConfig)."""

    refresh_groups_interval_seconds: int | None = DEFAULT_INTERVALS_S["refresh.groups"]
    emit_checkpoints_interval_seconds: int | None = DEFAULT_INTERVALS_S["emit.checkpoints"]
    sync_group_offsets_interval_seconds: int | None = None
    # Ours: share groups' start offsets (mm2.share_groups), off unless set.
    sync_share_group_offsets_interval_seconds: int | None = None
    checkpoints_topic_replication_factor: int = 3
    offset_syncs_topic_replication_factor: int = 3


@dataclass(frozen=True)
class HeartbeatSettings:
    """MirrorHeartbeatConnector's keys (MirrorHeartbeatConfig)."""

    emit_heartbeats_interval_seconds: int | None = DEFAULT_INTERVALS_S["emit.heartbeats"]
    heartbeats_topic_replication_factor: int = 3


@dataclass(frozen=True)
class SchemaSettings:
    """MirrorSchemaConnector's keys (ours): how often its task copies the source registry;
    None when `sync.schemas.enabled = false`. The registries themselves are cluster settings
    (`<alias>.schema.registry.url`, Flow.schema_registry_config)."""

    sync_schemas_interval_seconds: int | None = DEFAULT_INTERVALS_S["sync.schemas"]
    # The copy tasks rewrite the schema IDs of keys and of values (either can be turned off:
    # keys a LongSerializer wrote start with 0x00 too) and hold a record whose ID the map does
    # not have yet for at most this long before the task restarts, saying why.
    ids_keys: bool = True
    ids_values: bool = True
    ids_wait_ms: int = 60_000
    # Which source subjects describe a topic's keys and values (Confluent's serializer keys
    # key.subject.name.strategy / value.subject.name.strategy, the class's simple name): only
    # their IDs are rewritten; a topic no subject describes is copied byte for byte.
    key_strategy: str = SUBJECT_STRATEGIES[0]  # TopicNameStrategy
    value_strategy: str = SUBJECT_STRATEGIES[0]


@dataclass(frozen=True)
class WorkerSettings:
    """The Connect worker keys of the flow's herder that mm2 acts on (its source task keeps the
    offsets topic, as Apache's worker does). Apache reads them from `<target>.<key>` or the
    top level; mm2 also from `<source>-><target>.<key>`."""

    offset_storage_topic: str
    offset_storage_partitions: int = 25
    # None: not set; mm2 asks for 3 replicas and takes the broker's default where it has fewer.
    offset_storage_replication_factor: int | None = None
    config_storage_replication_factor: int = 3
    # Apache's default is disabled; mm2 copies exactly once unless told otherwise.
    exactly_once_source_support: ExactlyOnceSourceSupport = "enabled"


@dataclass(frozen=True)
class FlowSettings:
    """Everything a flow's connectors and its worker read, typed."""

    source: SourceSettings
    checkpoint: CheckpointSettings
    heartbeat: HeartbeatSettings
    worker: WorkerSettings
    schema: SchemaSettings = SchemaSettings()


@dataclass(frozen=True)
class MirrorMakerSettings:
    """The top-level keys of the process (not of a flow) that mm2 adds."""

    mm2_state_dir: str = DEFAULT_STATE_DIR
    mm2_configs_topic: str = "mm2-configs.internal"
    # "": the target of the file's first flow.
    mm2_configs_cluster: str = ""
    mm2_leader_session_timeout_ms: int = 10_000


# Each settings class's defaults, which flow_settings falls back on: the field declarations
# above are the one place a default is written.
_SOURCE, _CHECKPOINT, _HEARTBEAT = SourceSettings(), CheckpointSettings(), HeartbeatSettings()
_WORKER, _SCHEMA, _PROCESS = (
    WorkerSettings(offset_storage_topic=""),
    SchemaSettings(),
    MirrorMakerSettings(),
)


_Choice = TypeVar("_Choice", bound=str)  # a Literal of the values a key allows


class _Reader:
    """Typed reads of one resolved map; a value that does not parse names its key."""

    def __init__(self, *maps: Mapping[str, str]) -> None:
        self._maps = maps

    def text(self, key: str) -> str | None:
        for m in self._maps:
            if key in m:
                return m[key]
        return None

    def boolean(self, key: str, default: bool) -> bool:
        value = self.text(key)
        try:
            return default if value is None else parse_bool(value)
        except ValueProblem as exc:
            raise ConfigError(str(exc), key=key) from None

    def whole(self, key: str, default: int) -> int:
        value = self.text(key)
        try:
            return default if value is None else parse_int(value, long=True)
        except ValueProblem as exc:
            raise ConfigError(str(exc), key=key) from None

    def stripped(self, key: str, default: str) -> str:
        value = self.text(key)
        return default if value is None else value.strip()

    def choice(self, key: str, default: _Choice) -> _Choice:
        """One of the values the key's definition allows (checked there), in lower case; typed
        as the default's choices."""
        return cast(_Choice, self.stripped(key, default).lower())

    def strategy(self, key: str, default: str) -> str:
        """A subject name strategy, by its class's name (a package before it is ignored)."""
        name = self.stripped(key, default).rsplit(".", 1)[-1]
        if name not in SUBJECT_STRATEGIES:
            raise ConfigError(f"{name!r} is none of {', '.join(SUBJECT_STRATEGIES)}", key=key)
        return name

    def interval_seconds(self, name: str) -> int | None:
        if not self.boolean(f"{name}.enabled", name not in DEFAULT_OFF):
            return None
        return self.whole(f"{name}.interval.seconds", DEFAULT_INTERVALS_S[name])


def flow_settings(
    source_alias: str,
    source: Mapping[str, str],
    checkpoint: Mapping[str, str],
    heartbeat: Mapping[str, str],
    worker: Mapping[str, str],
) -> FlowSettings:
    """The settings from each connector's resolved map and the herder's worker keys.

    A worker key set for the flow (`a->b.offset.storage.replication.factor`, which Apache
    passes to the connectors only) wins over the worker's own."""
    s, c, h = _Reader(source), _Reader(checkpoint), _Reader(heartbeat)
    w = _Reader(source, worker)
    # d*: each class's defaults, written once in its declaration above
    ds, dc, dh, dw, dsc = _SOURCE, _CHECKPOINT, _HEARTBEAT, _WORKER, _SCHEMA
    return FlowSettings(
        source=SourceSettings(
            tasks_max=s.whole("tasks.max", ds.tasks_max),
            offset_lag_max=s.whole("offset.lag.max", ds.offset_lag_max),
            replication_factor=s.whole("replication.factor", ds.replication_factor),
            refresh_topics_interval_seconds=s.interval_seconds("refresh.topics"),
            sync_topic_configs_interval_seconds=s.interval_seconds("sync.topic.configs"),
            sync_topic_acls_interval_seconds=s.interval_seconds("sync.topic.acls"),
            heartbeats_replication_enabled=s.boolean(
                "heartbeats.replication.enabled", ds.heartbeats_replication_enabled
            ),
            emit_offset_syncs_enabled=s.boolean(
                "emit.offset-syncs.enabled", ds.emit_offset_syncs_enabled
            ),
            offset_syncs_topic_replication_factor=s.whole(
                "offset-syncs.topic.replication.factor", ds.offset_syncs_topic_replication_factor
            ),
            offset_syncs_topic_location=s.choice(
                "offset-syncs.topic.location", ds.offset_syncs_topic_location
            ),
            exactly_once_support=s.choice("exactly.once.support", ds.exactly_once_support),
            transaction_boundary_interval_ms=s.whole(
                "transaction.boundary.interval.ms", ds.transaction_boundary_interval_ms
            ),
            skip_oversized_records=s.boolean("skip.oversized.records", ds.skip_oversized_records),
            progress_group_id=s.stripped("progress.group.id", ds.progress_group_id),
            progress_group_commit_interval_ms=s.whole(
                "progress.group.commit.interval.ms", ds.progress_group_commit_interval_ms
            ),
            mm2_state_dir=s.text("mm2.state.dir") or ds.mm2_state_dir,
        ),
        checkpoint=CheckpointSettings(
            refresh_groups_interval_seconds=c.interval_seconds("refresh.groups"),
            emit_checkpoints_interval_seconds=c.interval_seconds("emit.checkpoints"),
            sync_group_offsets_interval_seconds=c.interval_seconds("sync.group.offsets"),
            sync_share_group_offsets_interval_seconds=c.interval_seconds(
                "sync.share.group.offsets"
            ),
            checkpoints_topic_replication_factor=c.whole(
                "checkpoints.topic.replication.factor", dc.checkpoints_topic_replication_factor
            ),
            offset_syncs_topic_replication_factor=c.whole(
                "offset-syncs.topic.replication.factor", dc.offset_syncs_topic_replication_factor
            ),
        ),
        heartbeat=HeartbeatSettings(
            emit_heartbeats_interval_seconds=h.interval_seconds("emit.heartbeats"),
            heartbeats_topic_replication_factor=h.whole(
                "heartbeats.topic.replication.factor", dh.heartbeats_topic_replication_factor
            ),
        ),
        worker=WorkerSettings(
            offset_storage_topic=w.stripped("offset.storage.topic", "")
            or f"mm2-offsets.{source_alias}.internal",
            offset_storage_partitions=w.whole(
                "offset.storage.partitions", dw.offset_storage_partitions
            ),
            offset_storage_replication_factor=(
                w.whole("offset.storage.replication.factor", 0)
                if w.text("offset.storage.replication.factor") is not None
                else dw.offset_storage_replication_factor
            ),
            config_storage_replication_factor=w.whole(
                "config.storage.replication.factor", dw.config_storage_replication_factor
            ),
            exactly_once_source_support=w.choice(
                "exactly.once.source.support", dw.exactly_once_source_support
            ),
        ),
        # The schema connector's map is built from the same base as the source connector's.
        schema=SchemaSettings(
            sync_schemas_interval_seconds=s.interval_seconds("sync.schemas"),
            ids_keys=s.boolean("schema.ids.keys", dsc.ids_keys),
            ids_values=s.boolean("schema.ids.values", dsc.ids_values),
            ids_wait_ms=s.whole("schema.ids.wait.ms", dsc.ids_wait_ms),
            key_strategy=s.strategy("key.subject.name.strategy", dsc.key_strategy),
            value_strategy=s.strategy("value.subject.name.strategy", dsc.value_strategy),
        ),
    )


def mirror_maker_settings(raw: Mapping[str, str]) -> MirrorMakerSettings:
    """The process's own keys, from the file's top level (resolved)."""
    r, d = _Reader(raw), _PROCESS
    return MirrorMakerSettings(
        mm2_state_dir=r.text("mm2.state.dir") or d.mm2_state_dir,
        mm2_configs_topic=r.stripped("mm2.configs.topic", "") or d.mm2_configs_topic,
        mm2_configs_cluster=r.stripped("mm2.configs.cluster", d.mm2_configs_cluster),
        mm2_leader_session_timeout_ms=r.whole(
            "mm2.leader.session.timeout.ms", d.mm2_leader_session_timeout_ms
        ),
    )


def tasks_max(config: Mapping[str, str]) -> int:
    """Connect's `tasks.max` of any connector's resolved config (ConnectorConfig: 1)."""
    return _Reader(config).whole("tasks.max", _SOURCE.tasks_max)
