"""Connector config validation as Connect's `config/validate` reports it: errors per key."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mm2.config.librdkafka import TranslationProblem
from mm2.config.model import Flow
from mm2.config.value_types import TYPES
from mm2.config.values import ValueProblem, check_value
from mm2.runtime.herder import Plugins

__all__ = ["ConfigCheck", "validate_connector_config"]

_REQUIRED = ("connector.class", "source.cluster.alias", "target.cluster.alias")
_HEARTBEAT = "MirrorHeartbeatConnector"


@dataclass(frozen=True)
class ConfigCheck:
    """The keys looked at and the errors found, per key (an empty list means fine)."""

    plugin: str
    errors: dict[str, list[str]]

    @property
    def error_count(self) -> int:
        return sum(len(e) for e in self.errors.values())

    def summary(self) -> str:
        lines = [f"{k}: {e}" for k, errs in self.errors.items() for e in errs]
        return (
            f"Connector configuration is invalid and contains the following {len(lines)} "
            "error(s):\n" + "\n".join(lines)
        )


def plugin_name(config: Mapping[str, str]) -> str:
    return config.get("connector.class", "").rsplit(".", 1)[-1]


def validate_connector_config(config: Mapping[str, str], plugins: Plugins) -> ConfigCheck:
    """Every problem of `config` at once, each under the key to change."""
    errors: dict[str, list[str]] = {k: [] for k in (*_REQUIRED, *config)}
    for key in _REQUIRED:
        if not config.get(key, "").strip():
            errors[key].append(f'Missing required configuration "{key}" which has no default')
    plugin = plugin_name(config)
    if plugin and plugin not in plugins:
        errors["connector.class"].append(
            f"no connector plugin {plugin!r}; known: {', '.join(sorted(plugins))}"
        )
    for key, value in config.items():
        if key in TYPES:
            try:
                check_value(key, value)
            except ValueProblem as exc:
                errors[key].append(str(exc))
    if not any(errors.values()):
        _check_flow(config, errors)
    return ConfigCheck(plugin, errors)


def _check_flow(config: Mapping[str, str], errors: dict[str, list[str]]) -> None:
    flow = Flow.for_connector(config)
    for problem in flow.plugin_problems():
        errors.setdefault(problem.key, []).append(problem.detail)
    client_problems = flow.client_problems()
    for client_problem in client_problems:
        errors.setdefault(client_problem.key, []).append(str(client_problem))
    if not client_problems:
        _check_bootstrap(config, flow, errors)


def _check_bootstrap(config: Mapping[str, str], flow: Flow, errors: dict[str, list[str]]) -> None:
    """The clusters the connector talks to must be reachable somewhere: a config without
    bootstrap servers would start and fail (Kafka's clients require them)."""
    sides = ("target",) if plugin_name(config) == _HEARTBEAT else ("source", "target")
    for side in sides:
        try:
            client = flow.source_admin_config() if side == "source" else flow.target_admin_config()
        except TranslationProblem:
            continue  # reported above
        if not client.get("bootstrap.servers", "").strip():
            alias = flow.source if side == "source" else flow.target
            key = f"{side}.cluster.bootstrap.servers"
            errors.setdefault(key, []).append(
                f'Missing required configuration "{key}" which has no default: the '
                f"bootstrap servers of cluster {alias!r}"
            )
