"""Java Kafka client settings -> librdkafka settings, in one table; leftovers are reported."""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from mm2.config.stores import StoreProblem, key_pair, trusted_certificates

__all__ = [
    "ClientConfig",
    "ClientRole",
    "Translation",
    "TranslationProblem",
    "translate_client_config",
]

ClientRole = Literal["consumer", "producer", "admin"]
Out = dict[str, str]


class ClientConfig(dict[str, str]):
    """librdkafka settings of one client that also know the alias of the cluster they reach,
    so that mm2.kafka can name it in errors ("authentication failed for primary (...)").

    A plain dict to every reader; a copy made with `dict(...)` or `{**...}`, or pickled, loses
    the alias.
    """

    def __init__(self, settings: Mapping[str, str], *, alias: str) -> None:
        super().__init__(settings)
        self.alias = alias

    def __reduce__(self) -> tuple[type[dict[str, str]], tuple[dict[str, str]]]:
        # Pickled, it is a plain dict: a Spark executor unpickles it with mm2 and
        # confluent-kafka alone (mm2.config's dependencies are not there). The alias stays on
        # the driver, which names clusters in errors.
        return (dict, (dict(self),))

    def __copy__(self) -> ClientConfig:
        return ClientConfig(self, alias=self.alias)

    def __deepcopy__(self, memo: object) -> ClientConfig:
        return ClientConfig(dict(self), alias=self.alias)


class TranslationProblem(ValueError):
    """A Java client setting that cannot work with librdkafka as written; `key` names it."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key


@dataclass(frozen=True)
class Translation:
    config: dict[str, str]
    unsupported: tuple[str, ...] = field(default_factory=tuple)


def _same(name: str) -> Callable[[str, str, Out], None]:
    def put(_key: str, value: str, out: Out) -> None:
        out[name] = value.strip()

    return put


def _bootstrap(_key: str, value: str, out: Out) -> None:
    out["bootstrap.servers"] = ",".join(s.strip() for s in value.split(",") if s.strip())


def _lower(name: str) -> Callable[[str, str, Out], None]:
    def put(_key: str, value: str, out: Out) -> None:
        out[name] = value.strip().lower()

    return put


def _buffer_memory(_key: str, value: str, out: Out) -> None:
    out["queue.buffering.max.kbytes"] = str(max(1, int(value.strip()) // 1024))


def _endpoint_identification(_key: str, value: str, out: Out) -> None:
    out["ssl.endpoint.identification.algorithm"] = "https" if value.strip() else "none"


_ASSIGNORS = {
    "RangeAssignor": "range",
    "RoundRobinAssignor": "roundrobin",
    "CooperativeStickyAssignor": "cooperative-sticky",
}


def _assignors(key: str, value: str, out: Out) -> None:
    names = []
    for item in (v.strip() for v in value.split(",") if v.strip()):
        short = item.rsplit(".", 1)[-1]
        if short not in _ASSIGNORS:
            raise TranslationProblem(key, f"{item!r} has no librdkafka twin; use {_known()}")
        names.append(_ASSIGNORS[short])
    out["partition.assignment.strategy"] = ",".join(names)


def _known() -> str:
    return ", ".join(_ASSIGNORS)


_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s;]+))')


def _unquote(m: re.Match[str]) -> str:
    quoted = m.group(2)
    return re.sub(r"\\(.)", r"\1", quoted) if quoted is not None else m.group(3)


def _true(opts: Mapping[str, str], name: str) -> bool:
    return opts.get(name, "false").strip().lower() == "true"


def _kinit_command(kinit: str, keytab: bool) -> str:
    """librdkafka's kinit command line (renew, else log in anew) around a kinit executable."""
    login = '-t "%{sasl.kerberos.keytab}" -k' if keytab else "-k"
    who = "%{sasl.kerberos.principal}"
    return f"{kinit} -R {login} {who} || {kinit} {login} {who}"


def _krb5(key: str, opts: Mapping[str, str], out: Out) -> None:
    """Krb5LoginModule's options as librdkafka's. The JVM logs in by itself; librdkafka runs
    kinit (sasl.kerberos.kinit.cmd) into the process's ticket cache (KRB5CCNAME) and reads it."""
    if _true(opts, "useKeyTab") or "keyTab" in opts:
        if not opts.get("principal"):
            raise TranslationProblem(
                key, 'Krb5LoginModule with a keytab needs principal="name@REALM" (whom to log in)'
            )
        if opts.get("keyTab"):
            out["sasl.kerberos.keytab"] = opts["keyTab"]
        else:  # Java then reads the default keytab (KRB5_KTNAME, else /etc/krb5.keytab)
            out["sasl.kerberos.kinit.cmd"] = _kinit_command("kinit", keytab=False)
    elif _true(opts, "useTicketCache"):
        # A ticket someone else keeps fresh (kinit, k5start): librdkafka must not run kinit.
        out["sasl.kerberos.min.time.before.relogin"] = "0"
    else:
        raise TranslationProblem(
            key,
            "Krb5LoginModule needs useKeyTab=true with keyTab and principal (or "
            "useTicketCache=true): librdkafka cannot prompt for a password",
        )
    if opts.get("principal"):
        out["sasl.kerberos.principal"] = opts["principal"]
    if "serviceName" in opts:
        out.setdefault("sasl.kerberos.service.name", opts["serviceName"])


def _kinit(_key: str, value: str, out: Out) -> None:
    """Java's sasl.kerberos.kinit.cmd names the kinit executable (default /usr/bin/kinit),
    librdkafka's is a whole shell command: a path becomes librdkafka's command around it, a
    value that already is a command line (with %{...} or arguments) is kept as it is."""
    text = value.strip()
    command = "%{" in text or (any(c.isspace() for c in text) and not Path(text).is_file())
    if not text or command:
        out["sasl.kerberos.kinit.cmd"] = text
        return
    keytab = "sasl.kerberos.keytab" in out or "sasl.kerberos.kinit.cmd" not in out
    out["sasl.kerberos.kinit.cmd"] = _kinit_command(shlex.quote(text), keytab=keytab)


def _jaas(key: str, value: str, out: Out) -> None:
    module = value.strip().split(None, 1)[0] if value.strip() else ""
    opts = {m.group(1): _unquote(m) for m in _JAAS_OPTION.finditer(value)}
    short = module.rsplit(".", 1)[-1]
    if short in ("PlainLoginModule", "ScramLoginModule"):
        if "username" not in opts or "password" not in opts:
            raise TranslationProblem(key, f'{short} needs username="..." and password="..."')
        out["sasl.username"], out["sasl.password"] = opts["username"], opts["password"]
    elif short == "Krb5LoginModule":
        _krb5(key, opts, out)
    elif short == "OAuthBearerLoginModule":
        if "clientId" in opts:
            out["sasl.oauthbearer.method"] = "oidc"
            out["sasl.oauthbearer.client.id"] = opts["clientId"]
            out["sasl.oauthbearer.client.secret"] = opts.get("clientSecret", "")
            if "scope" in opts:
                out["sasl.oauthbearer.scope"] = opts["scope"]
        elif "unsecuredLoginStringClaim_sub" in opts:
            out["sasl.oauthbearer.config"] = f"principal={opts['unsecuredLoginStringClaim_sub']}"
            out["enable.sasl.oauthbearer.unsecure.jwt"] = "true"
    else:
        raise TranslationProblem(
            key,
            f"login module {module!r} is not understood; use PlainLoginModule, ScramLoginModule, "
            "Krb5LoginModule or OAuthBearerLoginModule",
        )


def _store(java: Mapping[str, str], used: set[str], store: str) -> tuple[str, str]:
    """ssl.<store>.location and ssl.<store>.type (JKS unless set, upper case); its location,
    type and password keys are marked used."""
    used.update({f"ssl.{store}.location", f"ssl.{store}.type", f"ssl.{store}.password"})
    location = java.get(f"ssl.{store}.location", "").strip()
    return location, java.get(f"ssl.{store}.type", "JKS").strip().upper()


def _stores(java: Mapping[str, str], out: Out, used: set[str], read: bool) -> None:
    """ssl.keystore.* / ssl.truststore.*: PEM stores map over by location; JKS and PKCS12
    stores are read (when `read`) into PEM text."""
    ks_loc, ks_type = _store(java, used, "keystore")
    if ks_loc:
        if ks_type == "PEM":
            out["ssl.certificate.location"] = ks_loc
            out["ssl.key.location"] = ks_loc
        elif not java.get("ssl.keystore.password"):
            raise TranslationProblem(
                "ssl.keystore.location", f"a {ks_type} keystore needs ssl.keystore.password"
            )
        elif read:
            key_password = java.get("ssl.key.password") or None
            try:
                pair = key_pair(ks_loc, ks_type, java["ssl.keystore.password"], key_password)
            except StoreProblem as exc:
                raise TranslationProblem("ssl.keystore.location", str(exc)) from None
            out["ssl.certificate.pem"] = pair.certificate_pem
            out["ssl.key.pem"] = pair.key_pem
            out["ssl.key.password"] = pair.password
            used.add("ssl.key.password")
    if "ssl.keystore.key" in java:
        out["ssl.key.pem"] = java["ssl.keystore.key"]
        used.add("ssl.keystore.key")
    if "ssl.keystore.certificate.chain" in java:
        out["ssl.certificate.pem"] = java["ssl.keystore.certificate.chain"]
        used.add("ssl.keystore.certificate.chain")
    ts_loc, ts_type = _store(java, used, "truststore")
    if ts_loc:
        if ts_type == "PEM":
            out["ssl.ca.location"] = ts_loc
        elif read:
            password = java.get("ssl.truststore.password") or None
            try:
                out["ssl.ca.pem"] = trusted_certificates(ts_loc, ts_type, password)
            except StoreProblem as exc:
                raise TranslationProblem("ssl.truststore.location", str(exc)) from None
    if "ssl.truststore.certificates" in java:
        out["ssl.ca.pem"] = java["ssl.truststore.certificates"]
        used.add("ssl.truststore.certificates")


Rule = Callable[[str, str, Out], None]
_ALL: dict[str, Rule] = {
    "bootstrap.servers": _bootstrap,
    "client.id": _same("client.id"),
    "client.rack": _same("client.rack"),
    "security.protocol": _lower("security.protocol"),
    "sasl.mechanism": _same("sasl.mechanisms"),
    "sasl.jaas.config": _jaas,
    "sasl.kerberos.service.name": _same("sasl.kerberos.service.name"),
    "sasl.kerberos.kinit.cmd": _kinit,
    "sasl.kerberos.min.time.before.relogin": _same("sasl.kerberos.min.time.before.relogin"),
    "sasl.oauthbearer.token.endpoint.url": _same("sasl.oauthbearer.token.endpoint.url"),
    "ssl.key.password": _same("ssl.key.password"),
    "ssl.endpoint.identification.algorithm": _endpoint_identification,
    "receive.buffer.bytes": _same("socket.receive.buffer.bytes"),
    "send.buffer.bytes": _same("socket.send.buffer.bytes"),
    "connections.max.idle.ms": _same("connections.max.idle.ms"),
    "metadata.max.age.ms": _same("metadata.max.age.ms"),
    "reconnect.backoff.ms": _same("reconnect.backoff.ms"),
    "reconnect.backoff.max.ms": _same("reconnect.backoff.max.ms"),
    "retry.backoff.ms": _same("retry.backoff.ms"),
    "retry.backoff.max.ms": _same("retry.backoff.max.ms"),
    "socket.connection.setup.timeout.ms": _same("socket.connection.setup.timeout.ms"),
    "client.dns.lookup": _same("client.dns.lookup"),
}
_PRODUCER: dict[str, Rule] = {
    "acks": _same("acks"),
    "compression.type": _lower("compression.type"),
    "linger.ms": _same("linger.ms"),
    "batch.size": _same("batch.size"),
    "max.request.size": _same("message.max.bytes"),
    "buffer.memory": _buffer_memory,
    "retries": _same("retries"),
    "delivery.timeout.ms": _same("delivery.timeout.ms"),
    "request.timeout.ms": _same("request.timeout.ms"),
    "enable.idempotence": _same("enable.idempotence"),
    "max.in.flight.requests.per.connection": _same("max.in.flight.requests.per.connection"),
    "transactional.id": _same("transactional.id"),
    "transaction.timeout.ms": _same("transaction.timeout.ms"),
}
_CONSUMER: dict[str, Rule] = {
    "group.id": _same("group.id"),
    "group.instance.id": _same("group.instance.id"),
    "isolation.level": _same("isolation.level"),
    "auto.offset.reset": _same("auto.offset.reset"),
    "enable.auto.commit": _same("enable.auto.commit"),
    "auto.commit.interval.ms": _same("auto.commit.interval.ms"),
    "fetch.min.bytes": _same("fetch.min.bytes"),
    "fetch.max.bytes": _same("fetch.max.bytes"),
    "fetch.max.wait.ms": _same("fetch.wait.max.ms"),
    "max.partition.fetch.bytes": _same("max.partition.fetch.bytes"),
    "session.timeout.ms": _same("session.timeout.ms"),
    "heartbeat.interval.ms": _same("heartbeat.interval.ms"),
    "max.poll.interval.ms": _same("max.poll.interval.ms"),
    "partition.assignment.strategy": _assignors,
    "check.crcs": _same("check.crcs"),
    "request.timeout.ms": _same("socket.timeout.ms"),
}
_ADMIN: dict[str, Rule] = {"request.timeout.ms": _same("socket.timeout.ms")}
_TABLE: dict[ClientRole, dict[str, Rule]] = {
    "producer": {**_ALL, **_PRODUCER},
    "consumer": {**_ALL, **_CONSUMER},
    "admin": {**_ALL, **_ADMIN},
}
# Settings MM2 itself fixes (records are copied as bytes) or that only tune Java: no warning.
# (librdkafka renews a Kerberos ticket every sasl.kerberos.min.time.before.relogin, in place of
# Java's renew window and jitter.)
_HANDLED = re.compile(
    r"(key|value)\.(de)?serializer|poll\.timeout\.ms|ssl\.(keymanager|trustmanager)\.algorithm"
    r"|sasl\.kerberos\.ticket\.renew\.(window\.factor|jitter)"
)


def translate_client_config(
    java: Mapping[str, str], role: ClientRole, *, read_stores: bool = True
) -> Translation:
    """librdkafka settings for a Java client config; unknown keys come back as `unsupported`.

    JKS and PKCS12 stores are read into PEM text unless `read_stores` is false (a check of the
    settings alone, on a host that may not have the files).
    """
    out: Out = {}
    used: set[str] = set()
    _stores(java, out, used, read_stores)
    table = _TABLE[role]
    unsupported = []
    for key in sorted(java):
        value = java[key]
        if key in used or _HANDLED.fullmatch(key):
            continue
        rule = table.get(key)
        if rule is None:
            unsupported.append(key)
            continue
        try:
            rule(key, value, out)
        except ValueError as exc:
            if isinstance(exc, TranslationProblem):
                raise
            raise TranslationProblem(key, f"{value!r} is not a number") from None
    return Translation(out, tuple(unsupported))
