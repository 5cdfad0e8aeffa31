"""The Java clients' ConfigDefs as data: each producer, consumer and admin key's type, bounds and
accepted values, so that a value Apache's clients refuse is refused at load, naming its key.

Kept in step with Apache by tests/unit/config/test_config_strict.py, which asks Apache's own
ConfigDefs about every key here.
"""

from __future__ import annotations

from typing import NamedTuple

from mm2.config.value_types import ValueType

__all__ = ["CLIENT_DEFS", "SASL_MECHANISMS", "STORE_TYPES", "Def", "client_def"]


class Def(NamedTuple):
    """A ConfigDef entry: the type, inclusive bounds (numbers), and extra values allowed outside
    them; choices (a tuple type) compare case-sensitively unless `ignore_case`."""

    kind: ValueType
    low: float | None = None
    high: float | None = None
    ignore_case: bool = False
    also: tuple[str, ...] = ()
    non_empty: bool = False


# The mechanisms librdkafka implements; Apache has no list (a typo fails when the client starts).
SASL_MECHANISMS = ("GSSAPI", "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
# What mm2 reads (Java's KeyStore.getInstance compares types case-insensitively).
STORE_TYPES = ("JKS", "PKCS12", "PEM")

_COMMON: dict[str, Def] = {
    "bootstrap.servers": Def("list", non_empty=True),
    "client.id": Def("string"),
    "client.dns.lookup": Def(("use_all_dns_ips", "resolve_canonical_bootstrap_servers_only")),
    "connections.max.idle.ms": Def("long"),
    "metadata.max.age.ms": Def("long", low=0),
    "metadata.recovery.strategy": Def(("rebootstrap", "none"), ignore_case=True),
    "metadata.recovery.rebootstrap.trigger.ms": Def("long", low=0),
    "metrics.num.samples": Def("int", low=1),
    "metrics.recording.level": Def(("INFO", "DEBUG", "TRACE")),
    "metrics.sample.window.ms": Def("long", low=0),
    "metric.reporters": Def("list"),
    "enable.metrics.push": Def("boolean"),
    "receive.buffer.bytes": Def("int", low=-1),
    "send.buffer.bytes": Def("int", low=-1),
    "reconnect.backoff.ms": Def("long", low=0),
    "reconnect.backoff.max.ms": Def("long", low=0),
    "retry.backoff.ms": Def("long", low=0),
    "retry.backoff.max.ms": Def("long", low=0),
    "request.timeout.ms": Def("int", low=0),
    "socket.connection.setup.timeout.ms": Def("long"),
    "socket.connection.setup.timeout.max.ms": Def("long"),
    "security.protocol": Def(("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"), ignore_case=True),
    "security.providers": Def("string"),
    # SSL
    "ssl.protocol": Def("string"),
    "ssl.provider": Def("string"),
    "ssl.cipher.suites": Def("list"),
    "ssl.enabled.protocols": Def("list"),
    "ssl.keystore.type": Def(STORE_TYPES, ignore_case=True),
    "ssl.keystore.location": Def("string"),
    "ssl.keystore.password": Def("password"),
    "ssl.key.password": Def("password"),
    "ssl.keystore.key": Def("password"),
    "ssl.keystore.certificate.chain": Def("password"),
    "ssl.truststore.type": Def(STORE_TYPES, ignore_case=True),
    "ssl.truststore.location": Def("string"),
    "ssl.truststore.password": Def("password"),
    "ssl.truststore.certificates": Def("password"),
    "ssl.keymanager.algorithm": Def("string"),
    "ssl.trustmanager.algorithm": Def("string"),
    "ssl.endpoint.identification.algorithm": Def("string"),
    "ssl.secure.random.implementation": Def("string"),
    "ssl.engine.factory.class": Def("class"),
    # SASL
    "sasl.mechanism": Def(SASL_MECHANISMS),
    "sasl.jaas.config": Def("password"),
    "sasl.kerberos.service.name": Def("string"),
    "sasl.kerberos.kinit.cmd": Def("string"),
    "sasl.kerberos.ticket.renew.window.factor": Def("double"),
    "sasl.kerberos.ticket.renew.jitter": Def("double"),
    "sasl.kerberos.min.time.before.relogin": Def("long"),
    "sasl.login.refresh.window.factor": Def("double", low=0.5, high=1.0),
    "sasl.login.refresh.window.jitter": Def("double", low=0.0, high=0.25),
    "sasl.login.refresh.min.period.seconds": Def("short", low=0, high=900),
    "sasl.login.refresh.buffer.seconds": Def("short", low=0, high=3600),
    "sasl.login.connect.timeout.ms": Def("int"),
    "sasl.login.read.timeout.ms": Def("int"),
    "sasl.login.retry.backoff.ms": Def("long"),
    "sasl.login.retry.backoff.max.ms": Def("long"),
    "sasl.client.callback.handler.class": Def("class"),
    "sasl.login.callback.handler.class": Def("class"),
    "sasl.login.class": Def("class"),
    "sasl.oauthbearer.token.endpoint.url": Def("string"),
    "sasl.oauthbearer.jwks.endpoint.url": Def("string"),
    "sasl.oauthbearer.jwks.endpoint.refresh.ms": Def("long"),
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms": Def("long"),
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms": Def("long"),
    "sasl.oauthbearer.scope.claim.name": Def("string"),
    "sasl.oauthbearer.sub.claim.name": Def("string"),
    "sasl.oauthbearer.clock.skew.seconds": Def("int"),
    "sasl.oauthbearer.expected.audience": Def("list"),
    "sasl.oauthbearer.expected.issuer": Def("string"),
    "sasl.oauthbearer.header.urlencode": Def("boolean"),
}
_PRODUCER: dict[str, Def] = {
    "acks": Def(("all", "-1", "0", "1")),
    "batch.size": Def("int", low=0),
    "buffer.memory": Def("long", low=0),
    "compression.type": Def(("none", "gzip", "snappy", "lz4", "zstd")),
    "compression.gzip.level": Def("int", low=1, high=9, also=("-1",)),
    "compression.lz4.level": Def("int", low=1, high=17),
    "compression.zstd.level": Def("int", low=-131072, high=22),
    "delivery.timeout.ms": Def("int", low=0),
    "enable.idempotence": Def("boolean"),
    "interceptor.classes": Def("list"),
    "key.serializer": Def("class"),
    "value.serializer": Def("class"),
    "linger.ms": Def("long", low=0),
    "max.block.ms": Def("long", low=0),
    "max.in.flight.requests.per.connection": Def("int", low=1),
    "max.request.size": Def("int", low=0),
    "metadata.max.idle.ms": Def("long", low=5000),
    "partitioner.class": Def("class"),
    "partitioner.ignore.keys": Def("boolean"),
    "partitioner.adaptive.partitioning.enable": Def("boolean"),
    "partitioner.availability.timeout.ms": Def("long", low=0),
    "retries": Def("int", low=0, high=2**31 - 1),
    "transactional.id": Def("string", non_empty=True),
    "transaction.timeout.ms": Def("int"),
}
_CONSUMER: dict[str, Def] = {
    "allow.auto.create.topics": Def("boolean"),
    "auto.commit.interval.ms": Def("int", low=0),
    "auto.offset.reset": Def(("latest", "earliest", "none")),
    "check.crcs": Def("boolean"),
    "client.rack": Def("string"),
    "default.api.timeout.ms": Def("int", low=0),
    "enable.auto.commit": Def("boolean"),
    "exclude.internal.topics": Def("boolean"),
    "fetch.max.bytes": Def("int", low=0),
    "fetch.max.wait.ms": Def("int", low=0),
    "fetch.min.bytes": Def("int", low=0),
    "group.id": Def("string"),
    "group.instance.id": Def("string", non_empty=True),
    "group.protocol": Def(("consumer", "classic"), ignore_case=True),
    "group.remote.assignor": Def("string"),
    "heartbeat.interval.ms": Def("int"),
    "interceptor.classes": Def("list"),
    "isolation.level": Def(("read_committed", "read_uncommitted")),
    "key.deserializer": Def("class"),
    "value.deserializer": Def("class"),
    "max.partition.fetch.bytes": Def("int", low=0),
    "max.poll.interval.ms": Def("int", low=1),
    "max.poll.records": Def("int", low=1),
    "partition.assignment.strategy": Def("list"),
    "session.timeout.ms": Def("int"),
}
_ADMIN: dict[str, Def] = {
    "default.api.timeout.ms": Def("int", low=0),
    "retries": Def("int", low=0, high=2**31 - 1),
}
CLIENT_DEFS: dict[str, dict[str, Def]] = {
    "producer": {**_COMMON, **_PRODUCER},
    "consumer": {**_COMMON, **_CONSUMER},
    "admin": {**_COMMON, **_ADMIN},
}


def client_def(role: str, key: str) -> Def | None:
    return CLIENT_DEFS.get(role, {}).get(key)
