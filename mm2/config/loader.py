"""load(): read mm2.properties, check it as Apache MM2 would, and build the frozen flows."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from mm2.config.model import CHECKPOINT, HEARTBEAT, SOURCE, Flow, MirrorMakerConfig
from mm2.config.names import DEPRECATED_NAMES, TYPES
from mm2.config.properties import PropertiesFile, read_properties
from mm2.config.providers import ProviderProblem, Providers
from mm2.config.resolve import cluster_pairs, connector_base_config, flow_key, parse_clusters
from mm2.config.values import ValueProblem, check_value, parse_bool
from mm2.errors import ConfigError

__all__ = ["load", "load_properties"]

log = logging.getLogger(__name__)


class _Checker:
    def __init__(self, props: PropertiesFile) -> None:
        self.props = props

    def error(self, key: str | None, message: str) -> ConfigError:
        line = self.props.line_of(key) if key is not None else None
        return ConfigError(message, file=self.props.path, line=line, key=key)

    def origin(self, flow: Flow, key: str) -> str:
        """The raw key a connector setting came from, for the line number."""
        candidate = flow_key(flow.source, flow.target, key)
        return candidate if candidate in self.props.values else key


def load(
    path: str | Path, clusters: Sequence[str] | None = None, strict: bool = False
) -> MirrorMakerConfig:
    """Read and resolve an mm2.properties file; ConfigError names file, line, key and the fix."""
    return load_properties(read_properties(path), clusters=clusters, strict=strict)


def load_properties(
    props: PropertiesFile, clusters: Sequence[str] | None = None, strict: bool = False
) -> MirrorMakerConfig:
    check = _Checker(props)
    raw = props.values
    if "clusters" not in raw:
        raise check.error(
            "clusters", "missing; list the cluster aliases, e.g. clusters = primary, backup"
        )
    aliases = parse_clusters(raw["clusters"])
    if not aliases:
        raise check.error("clusters", "is empty; list the cluster aliases, e.g. primary, backup")
    try:
        providers = Providers.from_settings(raw)
    except ProviderProblem as exc:
        raise check.error("config.providers", str(exc)) from None
    warnings: list[str] = []
    for key, value in raw.items():
        _check_key(check, key, value, aliases)
        try:
            providers.resolve(value)
        except ProviderProblem as exc:
            raise check.error(key, f"{exc}; fix the reference or the provider settings") from None
        head, _, rest = key.partition(".")
        short = rest if "->" in head else key
        if short in DEPRECATED_NAMES:
            new = key[: len(key) - len(short)] + DEPRECATED_NAMES[short]
            line = props.line_of(key)
            warnings.append(f"{props.path}:{line}: {key} is deprecated; use {new}")
    if clusters:
        unknown = [c for c in clusters if c not in aliases]
        if unknown:
            raise ConfigError(
                f"--clusters names unknown alias(es) {', '.join(unknown)}; "
                f"clusters defined: {', '.join(aliases)}",
                file=props.path,
            )
    pairs = [p for p in cluster_pairs(raw, aliases) if not clusters or p[1] in clusters]
    if not pairs:
        raise check.error(
            None,
            "No source->target replication flows: set A->B.enabled = true for a pair of aliases "
            "(or leave heartbeats on)",
        )
    flows = tuple(_build_flow(check, raw, providers, s, t) for s, t in pairs)
    for alias in sorted({a for p in pairs for a in p}):
        if f"{alias}.bootstrap.servers" not in raw and "bootstrap.servers" not in raw:
            raise check.error(
                f"{alias}.bootstrap.servers",
                f"missing; cluster {alias!r} needs "
                f"{alias}.bootstrap.servers = host:port[,host:port]",
            )
    unsupported = sorted({s for f in flows if f.enabled for s in f.unsupported_client_settings()})
    if unsupported:
        message = (
            "these Java client settings have no librdkafka equivalent and are ignored: "
            + ", ".join(unsupported)
        )
        if strict:
            raise ConfigError(message + " (remove them or run without --strict)", file=props.path)
        warnings.append(f"{props.path}: {message}")
    for w in warnings:
        log.warning("%s", w)
    return MirrorMakerConfig(props.path, tuple(aliases), flows, tuple(warnings), dict(raw))


def _check_key(check: _Checker, key: str, value: str, aliases: list[str]) -> None:
    head, _, rest = key.partition(".")
    setting = key
    if "->" in head:
        source, _, target = head.partition("->")
        for alias in (source, target):
            if alias not in aliases:
                raise check.error(
                    key,
                    f"unknown cluster alias {alias!r} in a flow setting; "
                    f"clusters defined: {', '.join(aliases)}",
                )
        if source == target:
            raise check.error(key, "a flow needs two different clusters")
        setting = rest
    elif head in aliases and rest in ("security.protocol",):
        setting = rest
    if setting in TYPES:
        try:
            check_value(setting, value)
        except ValueProblem as exc:
            raise check.error(key, str(exc)) from None


def _build_flow(
    check: _Checker, raw: dict[str, str], providers: Providers, source: str, target: str
) -> Flow:
    connectors = {
        name: connector_base_config(raw, source, target, name)
        for name in (SOURCE, CHECKPOINT, HEARTBEAT)
    }
    enabled = parse_bool(connectors[SOURCE]["enabled"])
    flow = Flow(source, target, enabled, connectors, providers)
    if plugins := flow.plugin_problems():
        raise check.error(check.origin(flow, plugins[0].key), plugins[0].detail)
    if enabled and (clients := flow.client_problems()):
        key = _find_client_key(check, source, target, clients[0].key)
        raise check.error(key, str(clients[0]))
    return flow


def _find_client_key(check: _Checker, source: str, target: str, key: str) -> str:
    for alias in (source, target):
        for candidate in (
            f"{alias}.consumer.{key}",
            f"{alias}.producer.{key}",
            f"{alias}.admin.{key}",
            f"{alias}.{key}",
        ):
            if candidate in check.props.values:
                return candidate
    return key
