"""The resolved configuration: frozen flows with their connector maps and typed accessors."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from mm2.config.copy_settings import copy_settings
from mm2.config.librdkafka import (
    ClientConfig,
    ClientRole,
    TranslationProblem,
    translate_client_config,
)
from mm2.config.names import CLIENT_CONFIG_NAMES, PASSWORD_NAMES, WORKER_NAMES
from mm2.config.providers import Providers
from mm2.config.settings import (
    FlowSettings,
    MirrorMakerSettings,
    flow_settings,
    mirror_maker_settings,
)
from mm2.config.values import parse_bool
from mm2.copy.settings import CopySettings
from mm2.errors import ConfigError
from mm2.policies.filter import (
    ConfigPropertyFilter,
    GroupFilter,
    TopicFilter,
    load_config_property_filter,
    load_group_filter,
    load_topic_filter,
)
from mm2.policies.group_mirroring import GroupMirroringPolicy, load_group_mirroring_policy
from mm2.policies.replication import PolicyConfigError, ReplicationPolicy, load_replication_policy

__all__ = ["HIDDEN", "SCHEMA", "Flow", "MirrorMakerConfig", "is_password", "syncs_schemas"]

HIDDEN = "[hidden]"
SOURCE, CHECKPOINT, HEARTBEAT = (
    "MirrorSourceConnector",
    "MirrorCheckpointConnector",
    "MirrorHeartbeatConnector",
)
# Ours: a flow whose clusters both name a Schema Registry gets a fourth connector.
SCHEMA = "MirrorSchemaConnector"
_REGISTRY_PREFIX = "schema.registry."
_CLIENTS: tuple[tuple[str, ClientRole], ...] = (
    ("source", "consumer"),
    ("source", "admin"),
    ("source", "producer"),
    ("target", "producer"),
    ("target", "admin"),
    ("target", "consumer"),
)


def is_password(key: str) -> bool:
    return any(key == p or key.endswith("." + p) for p in PASSWORD_NAMES)


def _prefixed(props: Mapping[str, str], prefix: str) -> dict[str, str]:
    return {k[len(prefix) :]: v for k, v in props.items() if k.startswith(prefix)}


def syncs_schemas(connector_config: Mapping[str, str]) -> bool:
    """Whether a flow's connector map (its source connector's) names a Schema Registry for
    both clusters (`<alias>.schema.registry.url`): then the flow runs MirrorSchemaConnector."""
    return all(
        connector_config.get(f"{side}.cluster.{_REGISTRY_PREFIX}url", "").strip()
        for side in ("source", "target")
    )


@dataclass(frozen=True)
class Flow:
    """One herder source->target: the configs of its three connectors, as Apache builds them
    (Apache's key names), and its Connect worker's config (`worker`, Apache's workerConfig)."""

    source: str
    target: str
    enabled: bool
    connectors: Mapping[str, Mapping[str, str]]
    providers: Providers = field(default_factory=lambda: Providers({}), repr=False)
    worker: Mapping[str, str] = field(default_factory=dict, repr=False)

    @property
    def name(self) -> str:
        return f"{self.source}->{self.target}"

    @classmethod
    def for_connector(cls, config: Mapping[str, str]) -> Flow:
        """The flow as one connector (or task) sees it from its own, already resolved, map.

        Apache builds all three connector maps from one base, so the policy, filter and
        client keys of the flow are all present in each.
        """
        props = dict(config)
        return cls(
            props["source.cluster.alias"],
            props["target.cluster.alias"],
            parse_bool(props.get("enabled", "false")),
            {SOURCE: props, CHECKPOINT: props, HEARTBEAT: props}
            | ({SCHEMA: props} if syncs_schemas(props) else {}),
        )

    @property
    def state_dir(self) -> Path:
        """Where the flow keeps local caches under mm2.state.dir (never a position: those live in
        Kafka)."""
        return Path(self.settings.source.mm2_state_dir) / f"{self.source}_to_{self.target}"

    def worker_keys(self) -> dict[str, str]:
        """The worker keys mm2's connectors act on (names.WORKER_NAMES), unresolved: the herder
        hands them to each connector with its config (Apache's worker keeps them to itself)."""
        return {k: v for k, v in self.worker.items() if k in WORKER_NAMES}

    def connector_config(self, connector: str = SOURCE) -> dict[str, str]:
        """The map the connector starts with: its config over the worker keys it acts on, with
        `${provider:...}` references resolved (as the worker does)."""
        config = {**self.worker_keys(), **self.connectors[connector]}
        return {k: self.providers.resolve(v) for k, v in config.items()}

    @functools.cached_property
    def settings(self) -> FlowSettings:
        """Every setting the flow's connectors and worker read, typed (built once)."""
        return flow_settings(
            self.source,
            self.connector_config(SOURCE),
            self.connector_config(CHECKPOINT),
            self.connector_config(HEARTBEAT),
            {k: self.providers.resolve(v) for k, v in self.worker.items()},
        )

    @functools.cached_property
    def copy_settings(self) -> CopySettings:
        """What every copy task of the flow is given besides its partitions (built once; the
        planner hands this value to each copy task unchanged). ConfigError when
        exactly.once.support=required cannot be met."""
        return copy_settings(
            self.settings,
            source=self.source,
            target=self.target,
            source_consumer=self.source_consumer_config(),
            target_producer=self.target_producer_config(),
            source_admin=self.source_admin_config(),
            mirrors_schemas=syncs_schemas(self.connectors[SOURCE]),
        )

    # -- clients, in librdkafka terms (MirrorConnectorConfig's prefix precedence) --
    def _client(
        self, side: str, role: ClientRole, connector: str, label: str, read_stores: bool = True
    ) -> tuple[ClientConfig, tuple[str, ...]]:
        props = self.connector_config(connector)
        java = {
            k: v
            for k, v in _prefixed(props, f"{side}.cluster.").items()
            if k in CLIENT_CONFIG_NAMES
        }
        java.update(_prefixed(props, f"{role}."))
        java.update(_prefixed(props, f"{side}.{role}."))
        user_id = java.pop("client.id", None)
        if role == "consumer":
            java["enable.auto.commit"] = "false"
            java.setdefault("auto.offset.reset", "earliest")
        java["client.id"] = "|".join(
            p
            for p in (user_id, self.name, connector, label)
            if p  # Apache's entity label
        )
        result = translate_client_config(java, role, read_stores=read_stores)
        alias = self.source if side == "source" else self.target
        # Java's clients always send a request at once (TCP_NODELAY); librdkafka's socket holds
        # a small one back while an earlier one is unacknowledged (Nagle) unless told not to.
        config = {"socket.nagle.disable": "true", **result.config}
        return ClientConfig(config, alias=alias), result.unsupported

    def source_consumer_config(
        self, connector: str = SOURCE, label: str = "replication-consumer"
    ) -> ClientConfig:
        return self._client("source", "consumer", connector, label)[0]

    def source_admin_config(
        self, connector: str = SOURCE, label: str = "replication-source-admin"
    ) -> ClientConfig:
        return self._client("source", "admin", connector, label)[0]

    def source_producer_config(
        self, connector: str = SOURCE, label: str = "offset-syncs-source-producer"
    ) -> ClientConfig:
        return self._client("source", "producer", connector, label)[0]

    def target_producer_config(
        self, connector: str = SOURCE, label: str = "replication-producer"
    ) -> ClientConfig:
        config = self._client("target", "producer", connector, label)[0]
        config.setdefault("acks", "all")  # the Connect worker's producer default
        return config

    def target_admin_config(
        self, connector: str = SOURCE, label: str = "replication-target-admin"
    ) -> ClientConfig:
        return self._client("target", "admin", connector, label)[0]

    def target_consumer_config(
        self, connector: str = CHECKPOINT, label: str = "checkpoints-target-consumer"
    ) -> ClientConfig:
        return self._client("target", "consumer", connector, label)[0]

    def schema_registry_config(self, side: str, connector: str = SOURCE) -> dict[str, str]:
        """One side's Schema Registry settings, resolved, as Confluent's client keys
        (`schema.registry.url`, `schema.registry.basic.auth.user.info`, ...: mm2.schemas reads
        them); empty when that cluster names no registry."""
        found = _prefixed(self.connector_config(connector), f"{side}.cluster.")
        settings = {k: v for k, v in found.items() if k.startswith(_REGISTRY_PREFIX)}
        return settings if settings.get(_REGISTRY_PREFIX + "url", "").strip() else {}

    def unsupported_client_settings(self) -> list[str]:
        """`<side>.<role>.<key>` for every Java client setting librdkafka has no twin for."""
        found: set[str] = set()
        for side, role in _CLIENTS:
            try:
                unsupported = self._client(side, role, SOURCE, "", read_stores=False)[1]
            except TranslationProblem:
                continue  # client_problems reports it
            found.update(f"{side}.{role}.{key}" for key in unsupported)
        return sorted(found)

    # -- checks: what the loader and REST validation report --
    def plugin_problems(self) -> list[PolicyConfigError]:
        """The policy and filters that cannot be built from these settings, in that order."""
        found = []
        for build in (
            self.replication_policy,
            self.topic_filter,
            self.group_filter,
            self.group_mirroring_policy,
            self.config_property_filter,
        ):
            try:
                build()
            except PolicyConfigError as exc:
                found.append(exc)
        return found

    def client_checks(self, read_stores: bool = True) -> list[tuple[str, TranslationProblem]]:
        """(side, problem) for each of the flow's clients whose settings cannot be translated
        to librdkafka's; with `read_stores`, JKS and PKCS12 stores are read too."""
        found = []
        for side, role in _CLIENTS:
            try:
                self._client(side, role, SOURCE, "", read_stores=read_stores)
            except TranslationProblem as exc:
                found.append((side, exc))
        return found

    def client_problems(self) -> list[TranslationProblem]:
        """The clients whose settings have no librdkafka translation (stores read too)."""
        return [problem for _, problem in self.client_checks()]

    # -- plug-ins --
    def replication_policy(self) -> ReplicationPolicy:
        return load_replication_policy(self.connector_config(SOURCE))

    def topic_filter(self) -> TopicFilter:
        return load_topic_filter(self.connector_config(SOURCE))

    def group_filter(self) -> GroupFilter:
        return load_group_filter(self.connector_config(CHECKPOINT))

    def group_mirroring_policy(self) -> GroupMirroringPolicy:
        return load_group_mirroring_policy(self.connector_config(CHECKPOINT))

    def config_property_filter(self) -> ConfigPropertyFilter:
        return load_config_property_filter(self.connector_config(SOURCE))

    def to_json(self) -> dict[str, object]:
        shown = {
            name: {k: HIDDEN if is_password(k) else v for k, v in props.items()}
            for name, props in self.connectors.items()
        }
        return {
            "source": self.source,
            "target": self.target,
            "enabled": self.enabled,
            "connectors": shown,
        }


@dataclass(frozen=True)
class MirrorMakerConfig:
    """Every herder Apache MM2 would start for this file, plus what the reader had to say."""

    path: str
    clusters: tuple[str, ...]
    flows: tuple[Flow, ...]
    warnings: tuple[str, ...] = ()
    raw: Mapping[str, str] = field(default_factory=dict, repr=False)
    lines: Mapping[str, int] = field(default_factory=dict, repr=False)

    def error(self, exc: ConfigError) -> ConfigError:
        """`exc` (raised by a reader of the raw settings) with this file and the key's line."""
        if exc.file is not None or exc.key is None:
            return exc
        key = exc.key
        if key not in self.lines and key.startswith("listeners.https."):
            key = key[len("listeners.https.") :]  # Connect's fallback to the unprefixed key
        line = self.lines.get(key)
        return ConfigError(exc.detail, file=self.path, line=line, key=key if line else exc.key)

    @functools.cached_property
    def settings(self) -> MirrorMakerSettings:
        """The process's own top-level keys, typed (built once)."""
        providers = Providers.from_settings(self.raw)
        own = {k: v for k, v in self.raw.items() if k.startswith("mm2.")}
        try:
            return mirror_maker_settings({k: providers.resolve(v) for k, v in own.items()})
        except ConfigError as exc:
            raise self.error(exc) from None

    def flow(self, source: str, target: str) -> Flow:
        for f in self.flows:
            if (f.source, f.target) == (source, target):
                return f
        raise KeyError(f"{source}->{target}")

    @property
    def enabled_flows(self) -> tuple[Flow, ...]:
        return tuple(f for f in self.flows if f.enabled)

    def to_json(self) -> dict[str, object]:
        return {"flows": [f.to_json() for f in self.flows]}
