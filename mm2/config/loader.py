"""load(): read mm2.properties, check it as Apache MM2 would, and build the frozen flows."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from mm2.config.keys import check_key, rest_problem, suggestion
from mm2.config.leniency import kinder_readings
from mm2.config.model import (
    CHECKPOINT,
    HEARTBEAT,
    SCHEMA,
    SOURCE,
    Flow,
    MirrorMakerConfig,
    syncs_schemas,
)
from mm2.config.names import DEPRECATED_NAMES, MM1_NAMES
from mm2.config.properties import PropertiesFile, read_properties
from mm2.config.providers import ProviderProblem, Providers
from mm2.config.resolve import (
    cluster_pairs,
    connector_base_config,
    flow_key,
    parse_clusters,
    worker_config,
)
from mm2.config.values import ValueProblem, did_you_mean, parse_bool
from mm2.errors import ConfigError

__all__ = ["load", "load_properties"]

log = logging.getLogger(__name__)


# Control characters, as the escapes a properties file writes them with.
_CONTROL = {i: f"\\x{i:02x}" for i in range(32)} | {10: "\\n", 13: "\\r", 9: "\\t"}


class _Checker:
    def __init__(self, props: PropertiesFile) -> None:
        self.props = props

    def error(self, key: str | None, message: str) -> ConfigError:
        line = self.props.line_of(key) if key is not None else None
        # One line whatever the values it quotes hold (`\n` in a value is a line break).
        one_line = message.translate(_CONTROL)
        return ConfigError(one_line, file=self.props.path, line=line, key=key)

    def origin(self, flow: Flow, key: str) -> str:
        """The raw key a connector setting came from, for the line number."""
        candidate = flow_key(flow.source, flow.target, key)
        return candidate if candidate in self.props.values else key


def load(
    path: str | Path,
    clusters: Sequence[str] | None = None,
    strict: bool = False,
    check_files: bool = True,
) -> MirrorMakerConfig:
    """Read and resolve an mm2.properties file; ConfigError names file, line, key and the fix.

    With `check_files` (the default, for starting), every file a `*.location` or JAAS key names
    must be readable and JKS/PKCS12 stores are read; without it (`--print-config`, which may run
    on another host) a missing file is only a warning.
    """
    return load_properties(
        read_properties(path), clusters=clusters, strict=strict, check_files=check_files
    )


def load_properties(
    props: PropertiesFile,
    clusters: Sequence[str] | None = None,
    strict: bool = False,
    check_files: bool = True,
    log_warnings: bool = True,
) -> MirrorMakerConfig:
    """The file's flows; its warnings are logged once here (`log_warnings`) and kept in the
    result (a running mirror that resolves the file again with stored changes says nothing)."""
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
    resolved: dict[str, str] = {}
    for key, value in raw.items():
        _check_alias(check, key, aliases)
        try:
            resolved[key] = providers.resolve(value)
        except ProviderProblem as exc:
            raise check.error(key, f"{exc}; fix the reference or the provider settings") from None
        _check_value(check, key, value, resolved[key], aliases)
        line = props.line_of(key)
        head, _, rest = key.partition(".")
        short = rest if "->" in head else key
        if short in DEPRECATED_NAMES:
            new = key[: len(key) - len(short)] + DEPRECATED_NAMES[short]
            warnings.append(f"{props.path}:{line}: {key} is deprecated; use {new}")
        elif short in MM1_NAMES:
            new = key[: len(key) - len(short)] + MM1_NAMES[short]
            warnings.append(
                f"{props.path}:{line}: {key} is a MirrorMaker 1 setting that mm2 does not read "
                f"(it is ignored); write {new} instead"
            )
        elif (known := suggestion(key, aliases)) is not None:
            warnings.append(
                f"{props.path}:{line}: {key} is not a known setting; did you mean {known}?"
            )
    where = {key: f"{props.path}:{props.line_of(key)}" for key in raw}
    warnings += kinder_readings(raw, resolved, aliases, where)
    if (listener := rest_problem(raw)) is not None:
        raise check.error(*listener)
    home = raw.get("mm2.configs.cluster", "").strip()
    if home and home not in aliases:
        raise check.error(
            "mm2.configs.cluster",
            f"{home!r} is not one of the clusters ({', '.join(aliases)})"
            + did_you_mean(home, aliases),
        )
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
    for alias in sorted({a for p in pairs for a in p}):
        if f"{alias}.bootstrap.servers" not in raw and "bootstrap.servers" not in raw:
            raise check.error(
                f"{alias}.bootstrap.servers",
                f"missing; cluster {alias!r} needs "
                f"{alias}.bootstrap.servers = host:port[,host:port]",
            )
    flows = tuple(_build_flow(check, raw, providers, s, t) for s, t in pairs)
    for key in _file_keys(raw):
        problem = _unreadable(resolved[key])
        if problem is None:
            continue
        if check_files:
            raise check.error(key, problem)
        warnings.append(f"{props.path}:{props.line_of(key)}: {key}: {problem} (on this host)")
    if check_files:
        for flow in flows:
            _read_stores(check, flow)
    unsupported = sorted({s for f in flows if f.enabled for s in f.unsupported_client_settings()})
    if unsupported:
        message = (
            "these Java client settings have no librdkafka equivalent and are ignored: "
            + ", ".join(unsupported)
        )
        if strict:
            raise ConfigError(message + " (remove them or run without --strict)", file=props.path)
        warnings.append(f"{props.path}: {message}")
    for w in warnings if log_warnings else ():
        log.warning("%s", w)
    return MirrorMakerConfig(
        props.path, tuple(aliases), flows, tuple(warnings), dict(raw), dict(props.lines)
    )


def _check_alias(check: _Checker, key: str, aliases: list[str]) -> None:
    head = key.partition(".")[0]
    if "->" not in head:
        return
    source, _, target = head.partition("->")
    for alias in (source, target):
        if alias not in aliases:
            raise check.error(
                key,
                f"unknown cluster alias {alias!r} in a flow setting; "
                f"clusters defined: {', '.join(aliases)}" + did_you_mean(alias, aliases),
            )
    if source == target:
        raise check.error(key, "a flow needs two different clusters")


def _check_value(check: _Checker, key: str, raw: str, value: str, aliases: list[str]) -> None:
    """The value's type, as Apache's ConfigDef would check it; a value that came from a config
    provider is not repeated in the message (it may be a secret)."""
    try:
        check_key(key, value, aliases)
    except ValueProblem as exc:
        message = str(exc)
        if raw != value:
            message = message.replace(repr(value), f"the value of {raw}")
        raise check.error(key, message) from None


_FILE_KEYS = ("ssl.keystore.location", "ssl.truststore.location", "java.security.auth.login.config")


def _file_keys(raw: dict[str, str]) -> list[str]:
    return [k for k in raw if k.endswith(_FILE_KEYS) and raw[k].strip()]


def _unreadable(path: str) -> str | None:
    """Why the file at `path` cannot be read, or None."""
    target = Path(path.strip())
    try:
        with target.open("rb"):
            pass
    except IsADirectoryError:
        return f"{target} is a directory, not a file"
    except OSError as exc:
        return f"cannot read {target} ({exc.strerror or exc})"
    except ValueError:  # a NUL character: no file has such a name
        return f"{path.strip()!r} is not a file name"
    return None


def _build_flow(
    check: _Checker, raw: dict[str, str], providers: Providers, source: str, target: str
) -> Flow:
    connectors = {
        name: connector_base_config(raw, source, target, name)
        for name in (SOURCE, CHECKPOINT, HEARTBEAT)
    }
    if syncs_schemas(connectors[SOURCE]):
        connectors[SCHEMA] = connector_base_config(raw, source, target, SCHEMA)
    enabled = parse_bool(connectors[SOURCE]["enabled"])
    flow = Flow(source, target, enabled, connectors, providers, worker_config(raw, source, target))
    if plugins := flow.plugin_problems():
        raise check.error(check.origin(flow, plugins[0].key), plugins[0].detail)
    try:
        flow.settings  # noqa: B018 - typed once, here, so that a bad value names its line
    except ConfigError as exc:
        raise check.error(check.origin(flow, exc.key or ""), exc.detail) from None
    if enabled:
        _client_checks(check, flow, read_stores=False)
    return flow


def _read_stores(check: _Checker, flow: Flow) -> None:
    """Read the flow's JKS and PKCS12 stores now, so that a wrong password stops the start."""
    if flow.enabled:
        _client_checks(check, flow, read_stores=True)


def _client_checks(check: _Checker, flow: Flow, read_stores: bool) -> None:
    if clients := flow.client_checks(read_stores=read_stores):
        side, problem = clients[0]
        alias = flow.source if side == "source" else flow.target
        raise check.error(_find_client_key(check, flow, side, alias, problem.key), str(problem))


def _find_client_key(check: _Checker, flow: Flow, side: str, alias: str, key: str) -> str:
    """The raw key a client setting of one side of the flow came from, highest precedence first."""
    pair = f"{flow.source}->{flow.target}"
    candidates = [f"{pair}.{side}.{role}.{key}" for role in ("consumer", "producer", "admin")]
    candidates += [f"{alias}.{role}.{key}" for role in ("consumer", "producer", "admin")]
    candidates += [f"{alias}.{key}", f"{pair}.{side}.cluster.{key}", key]
    return next((c for c in candidates if c in check.props.values), key)
