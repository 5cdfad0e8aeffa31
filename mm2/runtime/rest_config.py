"""The REST server's settings, from the keys Apache's Connect REST server reads.

`listeners` (default `http://:8083`), `rest.advertised.host.name|port|listener`; for https
listeners `listeners.https.ssl.*` falling back to `ssl.*`: `ssl.keystore.type = PEM` with
`ssl.keystore.location` a PEM file holding the key and certificate chain (`ssl.key.password`
if the key is encrypted), `ssl.client.auth = none|requested|required` with
`ssl.truststore.location` a PEM CA bundle. HTTP Basic authentication as Connect's
BasicAuthSecurityRestExtension does it: `rest.extension.classes` names the extension, and the
JAAS file (`java.security.auth.login.config` in mm2.properties, or `-D...` in KAFKA_OPTS) has a
`KafkaConnect` entry whose PropertyFileLoginModule `file` option names a `user: password` file.
"""

from __future__ import annotations

import os
import re
import shlex
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from mm2.config.keys import parse_listener
from mm2.config.properties import read_properties
from mm2.config.values import ValueProblem
from mm2.errors import ConfigError

__all__ = [
    "BASIC_AUTH_EXTENSION",
    "DEFAULT_LISTENERS",
    "Listener",
    "RestConfig",
    "TlsConfig",
    "rest_config",
]

# Connect's default: every interface, port 8083.
DEFAULT_LISTENERS = "http://:8083"
BASIC_AUTH_EXTENSION = "org.apache.kafka.connect.rest.basic.auth.extension."
BASIC_AUTH_EXTENSION += "BasicAuthSecurityRestExtension"
JAAS_KEY = "java.security.auth.login.config"
ClientAuth = Literal["none", "requested", "required"]


@dataclass(frozen=True)
class Listener:
    scheme: Literal["http", "https"]
    host: str
    port: int

    @property
    def bind_host(self) -> str:
        return self.host or "0.0.0.0"  # noqa: S104 - Connect's `http://:8083` means every interface


@dataclass(frozen=True)
class TlsConfig:
    certfile: str
    keyfile: str
    password: str | None = None
    client_auth: ClientAuth = "none"
    cafile: str | None = None


@dataclass(frozen=True)
class RestConfig:
    listeners: tuple[Listener, ...]
    tls: TlsConfig | None = None
    credentials: Mapping[str, str] | None = None
    advertised_host: str | None = None
    advertised_port: int | None = None
    advertised_listener: str | None = None

    def worker_id(self) -> str:
        """This process's id among the mirror's nodes, as Connect's: the advertised host and
        port of the first listener. A listener on port 0 (any free port) is known only once
        bound, so the process id stands in for it: two nodes on one host never share an id."""
        listener = self.listeners[0]
        host = self.advertised_host or listener.host or socket.gethostname()
        port = self.advertised_port or listener.port
        return f"{host}:{port}" if port else f"{host}:pid-{os.getpid()}"

    def url(self, listener: Listener, port: int) -> str:
        """What to tell operators (rest.advertised.* where set)."""
        scheme = self.advertised_listener or listener.scheme
        host = self.advertised_host or listener.host or socket.gethostname()
        return f"{scheme}://{host}:{self.advertised_port or port}"


def _listener(text: str) -> Listener:
    try:
        return Listener(*parse_listener(text))
    except ValueProblem as exc:
        raise ConfigError(str(exc), key="listeners") from None


def _tls(raw: Mapping[str, str]) -> TlsConfig:
    def get(key: str) -> str | None:
        return raw.get(f"listeners.https.{key}", raw.get(key))

    location = get("ssl.keystore.location")
    kind = (get("ssl.keystore.type") or "PEM").upper()
    if not location or kind != "PEM":
        raise ConfigError(
            "https listeners need ssl.keystore.type = PEM and ssl.keystore.location = a PEM file "
            "with the key and certificate chain (convert a JKS keystore with keytool/openssl)",
            key="listeners.https.ssl.keystore.location",
        )
    auth = (get("ssl.client.auth") or "none").lower()
    if auth not in ("none", "requested", "required"):
        raise ConfigError("use none, requested or required", key="ssl.client.auth")
    cafile = get("ssl.truststore.location")
    if auth != "none" and not cafile:
        raise ConfigError(
            "client authentication needs ssl.truststore.location (PEM CA bundle)",
            key="ssl.truststore.location",
        )
    return TlsConfig(location, location, get("ssl.key.password"), auth, cafile)  # type: ignore[arg-type]


def _jaas_file(raw: Mapping[str, str], env: Mapping[str, str]) -> str:
    if raw.get(JAAS_KEY):
        return raw[JAAS_KEY]
    for word in shlex.split(env.get("KAFKA_OPTS", "")):
        if word.startswith(f"-D{JAAS_KEY}="):
            return word.split("=", 1)[1]
    raise ConfigError(
        f"{BASIC_AUTH_EXTENSION} needs a JAAS file: set {JAAS_KEY} = /path/to/connect.jaas",
        key="rest.extension.classes",
    )


def _credentials(raw: Mapping[str, str], env: Mapping[str, str]) -> dict[str, str]:
    jaas = _jaas_file(raw, env)
    try:
        text = Path(jaas).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(
            f"cannot read the JAAS file {jaas}: {exc.strerror}", key=JAAS_KEY
        ) from None
    entry = re.search(r"KafkaConnect\s*\{(.*?)\}\s*;", text, re.S)
    found = re.search(r'\bfile\s*=\s*"([^"]*)"', entry.group(1)) if entry else None
    if found is None:
        raise ConfigError(
            f'{jaas}: no KafkaConnect entry with a PropertyFileLoginModule file="..." option',
            key=JAAS_KEY,
        )
    return dict(read_properties(found.group(1)).values)


def rest_config(raw: Mapping[str, str], env: Mapping[str, str]) -> RestConfig:
    """The REST settings of a raw mm2.properties map; ConfigError names the key to fix."""
    listeners = tuple(
        _listener(t) for t in raw.get("listeners", DEFAULT_LISTENERS).split(",") if t.strip()
    )
    tls = _tls(raw) if any(lst.scheme == "https" for lst in listeners) else None
    extensions = [e.strip() for e in raw.get("rest.extension.classes", "").split(",")]
    unknown = [e for e in extensions if e and e != BASIC_AUTH_EXTENSION]
    if unknown:
        raise ConfigError(
            f"unknown REST extension(s) {', '.join(unknown)}; only {BASIC_AUTH_EXTENSION} exists",
            key="rest.extension.classes",
        )
    credentials = _credentials(raw, env) if BASIC_AUTH_EXTENSION in extensions else None
    port = raw.get("rest.advertised.port")
    if port is not None and not port.strip().isdigit():
        raise ConfigError(f"{port!r} is not a port number", key="rest.advertised.port")
    return RestConfig(
        listeners,
        tls,
        credentials,
        raw.get("rest.advertised.host.name") or None,
        int(port) if port else None,
        raw.get("rest.advertised.listener") or None,
    )
