"""Secured client listeners for LocalCluster: Kerberos (SASL GSSAPI), SCRAM over TLS, mutual TLS.

Each builder returns a SecureListener: the broker settings for one more listener (named after
its protocol), the JVM options and storage-format arguments it needs, and the host clients
must use. The cluster keeps its PLAINTEXT listener besides it (inter-broker traffic, the start
probe, and test clients that write and read); give `LocalCluster(secure=[...])`, then
`cluster.listeners["SASL_SSL"]` is the secured address.

Certificates and keytabs come from the caller (tests make PEM files with trustme, keytabs with
LocalKdc): nothing here creates secrets.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mm2.errors import ClusterError

__all__ = [
    "BrokerTls",
    "SecureListener",
    "gssapi_listener",
    "listener_settings",
    "mutual_tls_listener",
    "scram_listener",
]

_SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
# kafka-storage's --add-scram syntax has no quoting: keep names and passwords to safe characters.
_SCRAM_TEXT = re.compile(r"^[A-Za-z0-9._\-@+/]+$")


@dataclass(frozen=True)
class BrokerTls:
    """The broker's TLS material as PEM files.

    keystore: the broker's private key (PKCS#8, unencrypted) followed by its certificate chain;
    its certificate must name the listener's host (127.0.0.1 or localhost).
    truststore: the CA certificates the broker trusts for client certificates (mutual TLS).
    """

    keystore: Path
    truststore: Path


@dataclass(frozen=True)
class SecureListener:
    """One secured client listener, named after its protocol (SASL_PLAINTEXT, SASL_SSL, SSL)."""

    protocol: str
    broker_config: Mapping[str, str]
    host: str = "127.0.0.1"
    jvm_options: tuple[str, ...] = ()
    format_arguments: tuple[str, ...] = ()
    mechanism: str | None = None
    description: str = field(default="", compare=False)


def _prefix(protocol: str) -> str:
    return f"listener.name.{protocol.lower()}."


def _tls_settings(protocol: str, tls: BrokerTls, *, client_auth: str) -> dict[str, str]:
    for path in (tls.keystore, tls.truststore):
        if not Path(path).is_file():
            raise ClusterError(f"{protocol} listener: no such PEM file {path}")
    p = _prefix(protocol)
    return {
        f"{p}ssl.keystore.type": "PEM",
        f"{p}ssl.keystore.location": str(Path(tls.keystore).resolve()),
        f"{p}ssl.truststore.type": "PEM",
        f"{p}ssl.truststore.location": str(Path(tls.truststore).resolve()),
        f"{p}ssl.client.auth": client_auth,
    }


def gssapi_listener(
    *, krb5_conf: Path, keytab: Path, principal: str, service_name: str = "kafka"
) -> SecureListener:
    """SASL_PLAINTEXT with GSSAPI: the broker logs in as `principal` (`kafka/localhost@REALM`)
    from `keytab`, and clients ask the KDC for a ticket to `service_name/<host>`, so the listener
    is advertised under the principal's host part."""
    name, _, realm = principal.partition("@")
    service, _, host = name.partition("/")
    if not realm or not host or service != service_name:
        raise ClusterError(
            f"broker principal {principal!r} must be {service_name}/HOST@REALM "
            "(clients derive it from the service name and the host they connect to)"
        )
    for path in (krb5_conf, keytab):
        if not Path(path).is_file():
            raise ClusterError(f"SASL_PLAINTEXT listener: no such file {path}")
    p = _prefix("SASL_PLAINTEXT")
    jaas = (
        "com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true "
        f'keyTab="{Path(keytab).resolve()}" principal="{principal}";'
    )
    return SecureListener(
        protocol="SASL_PLAINTEXT",
        broker_config={
            f"{p}sasl.enabled.mechanisms": "GSSAPI",
            f"{p}gssapi.sasl.jaas.config": jaas,
            "sasl.kerberos.service.name": service_name,
        },
        host=host,
        jvm_options=(f"-Djava.security.krb5.conf={Path(krb5_conf).resolve()}",),
        mechanism="GSSAPI",
        description=f"Kerberos as {principal}",
    )


def scram_listener(
    *, users: Mapping[str, str], tls: BrokerTls, mechanism: str = "SCRAM-SHA-512"
) -> SecureListener:
    """SASL_SSL with SCRAM: `users` (name -> password) are written into the cluster's metadata
    when its storage is formatted (kafka-storage format --add-scram), so they exist from the
    first start; the listener speaks TLS with `tls` (no client certificate asked)."""
    if mechanism not in _SCRAM_MECHANISMS:
        raise ClusterError(f"SCRAM mechanism {mechanism!r}: use one of {_SCRAM_MECHANISMS}")
    if not users:
        raise ClusterError("a SCRAM listener needs at least one user")
    arguments: list[str] = []
    for user, password in users.items():
        if not (_SCRAM_TEXT.match(user) and _SCRAM_TEXT.match(password)):
            raise ClusterError(
                f"SCRAM user {user!r}: names and passwords may hold letters, digits and ._-@+/"
            )
        arguments += ["--add-scram", f"{mechanism}=[name={user},password={password}]"]
    p = _prefix("SASL_SSL")
    login = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
    return SecureListener(
        protocol="SASL_SSL",
        broker_config={
            f"{p}sasl.enabled.mechanisms": mechanism,
            f"{p}{mechanism.lower()}.sasl.jaas.config": login,
            **_tls_settings("SASL_SSL", tls, client_auth="none"),
        },
        format_arguments=tuple(arguments),
        mechanism=mechanism,
        description=f"{mechanism} over TLS for {', '.join(users)}",
    )


def mutual_tls_listener(*, tls: BrokerTls) -> SecureListener:
    """SSL that requires a client certificate signed by a CA in `tls.truststore`."""
    return SecureListener(
        protocol="SSL",
        broker_config=_tls_settings("SSL", tls, client_auth="required"),
        description="mutual TLS",
    )


def listener_settings(
    listeners: str, secure: Sequence[SecureListener]
) -> tuple[str, dict[str, str], tuple[str, ...], tuple[str, ...]]:
    """`listeners` with one `PROTOCOL://host:0` per secured listener added, and the broker
    settings, JVM options and format arguments they bring, merged."""
    protocols = [s.protocol for s in secure]
    if len(set(protocols)) != len(protocols):
        raise ClusterError(f"one secured listener per protocol, not {protocols}")
    taken = {part.split("://", 1)[0].strip().upper() for part in listeners.split(",")}
    clash = [p for p in protocols if p in taken]
    if clash:
        raise ClusterError(f"listener(s) {clash} are both in `listeners` and secured")
    added = ",".join(f"{s.protocol}://{s.host}:0" for s in secure)
    config: dict[str, str] = {}
    for s in secure:
        config.update(s.broker_config)
    jvm = tuple(option for s in secure for option in s.jvm_options)
    arguments = tuple(argument for s in secure for argument in s.format_arguments)
    return ",".join(p for p in (listeners, added) if p), config, jvm, arguments
