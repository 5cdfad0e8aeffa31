"""Refuse to start when mm2.properties asks for what the installed Kafka client cannot do.

The confluent-kafka wheels on PyPI have no Kerberos (SASL GSSAPI): without this check such a
file loads, the flows show RUNNING, and every client fails inside librdkafka with "No provider
for SASL mechanism GSSAPI". The check names the file, line and key, and how to get a client
that can.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator

from mm2.config import MirrorMakerConfig, read_properties
from mm2.config.librdkafka import ClientConfig, TranslationProblem
from mm2.config.model import Flow
from mm2.errors import ConfigError
from mm2.kafka.features import client_description, missing_features, offered_mechanisms

__all__ = ["GSSAPI_HELP", "require_client_features"]

log = logging.getLogger(__name__)

GSSAPI_HELP = (
    "install a confluent-kafka built with Kerberos (librdkafka with libsasl2): in an mm2 "
    "checkout run `scripts/build-gssapi-client.sh $(which python)` and "
    "`pip install --no-deps --force-reinstall` the wheel it prints "
    "(docs/configuration.md: Kerberos)"
)
# The Java key (suffix) a librdkafka feature comes from, for naming it in the message.
_KEY_OF = {"ssl": "security.protocol", "oidc": "sasl.jaas.config"}


def require_client_features(config: MirrorMakerConfig, *, warn_only: bool = False) -> None:
    """ConfigError for the first cluster whose settings need a feature this client lacks
    (only a warning with `warn_only`, as --print-config may run where the mirror does not)."""
    seen: set[tuple[str, str]] = set()
    for alias, settings in _clients(config):
        for feature, why in missing_features(settings).items():
            if (alias, feature) in seen:
                continue
            seen.add((alias, feature))
            error = _error(config, alias, feature, why, settings)
            if not warn_only:
                raise error
            log.warning("%s (the mirror will refuse to start with this client)", error)


def _clients(config: MirrorMakerConfig) -> Iterator[tuple[str, ClientConfig]]:
    for flow in config.enabled_flows:
        makers: tuple[Callable[[Flow], ClientConfig], ...] = (
            Flow.source_consumer_config,
            Flow.source_admin_config,
            Flow.source_producer_config,
            Flow.target_producer_config,
            Flow.target_admin_config,
            Flow.target_consumer_config,
        )
        for make in makers:
            try:
                settings = make(flow)
            except TranslationProblem:
                continue  # the loader reports settings that cannot be translated
            yield settings.alias, settings


def _error(
    config: MirrorMakerConfig, alias: str, feature: str, why: str, settings: ClientConfig
) -> ConfigError:
    if feature.startswith("sasl_"):
        mechanism = settings.get("sasl.mechanisms", "GSSAPI").strip().upper()
        key = _origin(config, alias, "sasl.mechanism", mechanism) or _origin(
            config, alias, "security.protocol", None
        )
        offered = ", ".join(offered_mechanisms()) or "none"
        how = GSSAPI_HELP if feature == "sasl_gssapi" else _generic_help(feature)
        default = "" if "sasl.mechanisms" in settings else " (sasl.mechanism defaults to GSSAPI)"
        message = (
            f"{mechanism}{default} is not built into this Kafka client, "
            f"{client_description()}, which offers {offered}; {how}"
        )
    else:
        key = _origin(config, alias, _KEY_OF.get(feature, "security.protocol"), None)
        message = (
            f"{why} needs librdkafka's {feature}, which this Kafka client "
            f"({client_description()}) lacks; {_generic_help(feature)}"
        )
    key = key or f"{alias}.{_KEY_OF.get(feature, 'sasl.mechanism')}"
    return ConfigError(message, file=config.path, line=_line(config.path, key), key=key)


def _generic_help(feature: str) -> str:
    return f"install a confluent-kafka whose librdkafka has {feature} (the PyPI wheels do)"


def _origin(config: MirrorMakerConfig, alias: str, suffix: str, value: str | None) -> str | None:
    """The key of the file that set `suffix` for `alias`: alias-prefixed keys first, then flow
    keys naming the alias, then top-level ones; among them one holding `value` if given."""
    keys = [k for k in config.raw if k == suffix or k.endswith("." + suffix)]
    if value is not None:
        holding = [k for k in keys if config.raw[k].strip().upper() == value]
        keys = holding or keys

    def rank(key: str) -> int:
        head = key.split(".", 1)[0]
        if head == alias:
            return 0
        if "->" in head and alias in head.split("->"):
            return 1
        if "->" in head or head in config.clusters:
            return 3  # another cluster's or another flow's
        return 2  # top level, or consumer./producer./admin.

    ranked = sorted(keys, key=lambda k: (rank(k), k))
    return ranked[0] if ranked and rank(ranked[0]) < 3 else None


def _line(path: str, key: str) -> int | None:
    try:
        return read_properties(path).line_of(key)
    except ConfigError:
        return None
