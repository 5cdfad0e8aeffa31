"""Every key of mm2.properties checked by its shape, as Apache's ConfigDefs would check the value.

A key is top level (`tasks.max`), per cluster (`primary.bootstrap.servers`,
`primary.consumer.auto.offset.reset`) or per flow (`primary->backup.topics`,
`primary->backup.source.consumer.fetch.min.bytes`). `check_key` raises ValueProblem for a value
the setting's type refuses; `suggestion` names the known key an unknown one looks like a
misspelling of (Apache says nothing about unknown keys, so it is only ever a warning).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Literal, NamedTuple
from urllib.parse import urlsplit

from mm2.config.client_defs import CLIENT_DEFS, Def, client_def
from mm2.config.names import (
    CLIENT_CONFIG_NAMES,
    CONNECT_STORAGE_NAMES,
    CONNECTOR_CONFIG_NAMES,
    MM2_NAMES,
)
from mm2.config.value_types import TYPES
from mm2.config.values import ValueProblem, check_def, check_value, closest

__all__ = [
    "BASIC_AUTH_EXTENSION",
    "TOP_LEVEL",
    "WORKER_PREFIXES",
    "KeyShape",
    "check_bootstrap",
    "check_key",
    "parse_listener",
    "rest_problem",
    "shape",
    "suggestion",
]

ROLES = ("producer", "consumer", "admin")
BASIC_AUTH_EXTENSION = (
    "org.apache.kafka.connect.rest.basic.auth.extension.BasicAuthSecurityRestExtension"
)
# Top-level keys Apache's MirrorMakerConfig (and its REST server) defines, plus ours
# (their meanings: mm2.config.catalog).
TOP_LEVEL: dict[str, Def] = {
    "clusters": Def("string"),
    "config.providers": Def("string"),
    "dedicated.mode.enable.internal.rest": Def("boolean"),
    "listeners": Def("string"),
    "rest.advertised.host.name": Def("string"),
    "rest.advertised.port": Def("int", low=0, high=65535),
    "rest.advertised.listener": Def(("http", "https"), ignore_case=True),
    "rest.extension.classes": Def("string"),
    "access.control.allow.origin": Def("string"),
    "access.control.allow.methods": Def("string"),
    "response.http.headers.config": Def("string"),
    "ssl.client.auth": Def(("required", "requested", "none")),
    "listeners.https.ssl.client.auth": Def(("required", "requested", "none")),
    "listeners.https.ssl.keystore.type": Def(("PEM",), ignore_case=True),
    "java.security.auth.login.config": Def("string"),
    "mm2.configs.topic": Def("string", non_empty=True),
    "mm2.configs.cluster": Def("string"),
    "mm2.leader.session.timeout.ms": Def("int", low=1),
    "mm2.rest.secrets.key": Def("password"),
}
# Top-level prefixes whose keys reach the Connect worker (WORKER_PREFIXES) or the Spark session.
_TOP_PREFIXES = ("config.providers.", "listeners.https.", "spark.")
WORKER_PREFIXES = (
    "offset.storage.",
    "config.storage.",
    "status.storage.",
    "key.converter",
    "value.converter",
    "header.converter",
    "task.",
    "worker.",
    "replication.policy.",
    "offset.flush.",
    "group.",
)
_BOOTSTRAP = re.compile(r".*?\[?([0-9a-zA-Z\-%._:]*)\]?:([0-9]+)")


class KeyShape(NamedTuple):
    """What a raw key addresses: `roles` is set for a client setting (`setting` is then the
    client's own key); `scope` is "top", "cluster" or "flow"."""

    scope: str
    setting: str
    roles: tuple[str, ...] = ()


def shape(key: str, aliases: Sequence[str]) -> KeyShape:
    head, _, rest = key.partition(".")
    if "->" in head:
        for side in ("source.", "target."):
            if rest.startswith(side):
                role, _, setting = rest[len(side) :].partition(".")
                if role in ROLES and setting:
                    return KeyShape("flow", setting, (role,))
                if role == "cluster" and setting in CLIENT_CONFIG_NAMES:
                    return KeyShape("flow", setting, ROLES)
        role, _, setting = rest.partition(".")
        if role in ROLES and setting and rest not in CONNECTOR_CONFIG_NAMES:
            return KeyShape("flow", setting, (role,))
        return KeyShape("flow", rest)
    if head in aliases and rest:
        role, _, setting = rest.partition(".")
        if role in ROLES and setting:
            return KeyShape("cluster", setting, (role,))
        if rest in CLIENT_CONFIG_NAMES:
            return KeyShape("cluster", rest, ROLES)
        return KeyShape("cluster", rest)
    if key in CLIENT_CONFIG_NAMES:
        return KeyShape("top", key, ROLES)
    return KeyShape("top", key)


def check_bootstrap(value: str) -> None:
    """Apache's clients refuse a list without an address, or an address without a port."""
    urls = [u.strip() for u in value.split(",") if u.strip()]
    if not urls:
        raise ValueProblem("no address given; use host:port[,host:port]")
    for url in urls:
        found = _BOOTSTRAP.fullmatch(url)
        if found is None:
            raise ValueProblem(f"{url!r} has no port; use host:port[,host:port]")
        if int(found.group(2)) > 65535:
            raise ValueProblem(f"{url!r}: port {found.group(2)} is out of range (0-65535)")


def parse_listener(item: str) -> tuple[Literal["http", "https"], str, int]:
    """One REST listener URL as (scheme, host, port); ValueProblem names a bad one."""
    parts = urlsplit(item.strip())
    try:
        port = parts.port
    except ValueError:
        port = None
    if parts.scheme not in ("http", "https") or port is None:
        raise ValueProblem(f"{item!r} is not a listener; use http://host:port or https://host:port")
    return ("https" if parts.scheme == "https" else "http"), parts.hostname or "", port


def _check_listeners(value: str) -> None:
    for item in (t.strip() for t in value.split(",")):
        if item:
            parse_listener(item)


def check_key(key: str, value: str, aliases: Sequence[str]) -> None:
    """Raise ValueProblem when `value` is not what the setting `key` names accepts."""
    found = shape(key, aliases)
    setting = found.setting
    if found.roles:
        if setting == "bootstrap.servers":
            check_bootstrap(value)
            return
        for role in found.roles:
            d = client_def(role, setting)
            if d is not None:
                check_def(setting, value, d)
                return
        return
    if found.scope == "top" and setting in TOP_LEVEL:
        if setting == "listeners":
            _check_listeners(value)
        elif setting == "rest.extension.classes":
            unknown = [
                e.strip() for e in value.split(",") if e.strip() not in ("", BASIC_AUTH_EXTENSION)
            ]
            if unknown:
                raise ValueProblem(
                    f"unknown REST extension {unknown[0]!r}; only {BASIC_AUTH_EXTENSION} exists"
                )
        else:
            check_def(setting, value, TOP_LEVEL[setting])
        return
    if setting in TYPES and (
        found.scope != "cluster" or setting in MM2_NAMES or setting == "security.protocol"
    ):
        check_value(setting, value)


def _known_names(scope: str, roles: tuple[str, ...]) -> Iterator[str]:
    if roles:
        for role in roles:
            yield from CLIENT_DEFS[role]
        return
    yield from CLIENT_CONFIG_NAMES
    if scope == "cluster":
        yield from MM2_NAMES
        return
    yield from CONNECTOR_CONFIG_NAMES | MM2_NAMES
    if scope == "top":
        yield from TOP_LEVEL


def _is_known(found: KeyShape) -> bool:
    setting = found.setting
    if found.roles:
        return any(setting in CLIENT_DEFS[r] for r in found.roles)
    if setting in CONNECTOR_CONFIG_NAMES or setting in CLIENT_CONFIG_NAMES or setting in MM2_NAMES:
        return True
    if found.scope == "cluster":
        # A Connect worker key (`<alias>.offset.flush.interval.ms`) is fine; only a key close
        # to a client or mm2 key is taken for a misspelling, never one of Apache's own.
        return setting in MM2_NAMES or setting in CONNECT_STORAGE_NAMES
    if setting.startswith(WORKER_PREFIXES + _TOP_PREFIXES + ("consumer.", "producer.", "admin.")):
        return True
    return found.scope == "top" and setting in TOP_LEVEL


def suggestion(key: str, aliases: Sequence[str]) -> str | None:
    """The key this one looks like a misspelling of, when it is unknown and one is close."""
    head, dot, rest = key.partition(".")
    if dot and "->" not in head and head not in aliases and rest:
        alias = closest(head, aliases, cutoff=0.6)
        if alias and (rest in CLIENT_CONFIG_NAMES or rest.partition(".")[0] in ROLES):
            return f"{alias}.{rest}"
    found = shape(key, aliases)
    if _is_known(found):
        return None
    close = closest(found.setting, set(_known_names(found.scope, found.roles)), cutoff=0.85)
    return None if close is None else key[: len(key) - len(found.setting)] + close


def rest_problem(raw: Mapping[str, str]) -> tuple[str, str] | None:
    """(key, message) for REST settings that cannot work together (an https listener without a
    PEM keystore, client authentication without a truststore), or None."""
    listeners = raw.get("listeners", "")
    if not any(t.strip().startswith("https:") for t in listeners.split(",")):
        return None

    def setting(key: str) -> tuple[str, str | None]:
        prefixed = f"listeners.https.{key}"
        return (prefixed, raw[prefixed]) if prefixed in raw else (key, raw.get(key))

    key, location = setting("ssl.keystore.location")
    if not (location or "").strip():
        return "listeners", (
            "an https listener needs listeners.https.ssl.keystore.location (a PEM file with "
            "the private key and certificate chain) and ssl.keystore.type = PEM"
        )
    key, kind = setting("ssl.keystore.type")
    if (kind or "JKS").strip().upper() != "PEM":
        return key, (
            f"the REST listener reads a PEM keystore only, not {(kind or 'JKS (the default)')}; "
            "set it to PEM with a PEM file holding the key and certificate chain"
        )
    key, auth = setting("ssl.client.auth")
    _, trust = setting("ssl.truststore.location")
    if (auth or "none").strip() != "none" and not (trust or "").strip():
        return key, "client authentication needs ssl.truststore.location (PEM CA bundle)"
    return None
