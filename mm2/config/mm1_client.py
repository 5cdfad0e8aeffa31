"""One MirrorMaker 1 client file (`--consumer.config` or `--producer.config`) as mm2.properties
settings of one cluster alias: what every MirrorMaker 1-era client setting becomes (renamed,
dropped with the reason, refused with a warning, or kept), each setting remembering the file line
it came from (mm2.config.mm1 assembles the flow)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from mm2.config.model import is_password
from mm2.config.names import CLIENT_CONFIG_NAMES
from mm2.config.properties import PropertiesFile
from mm2.errors import ConfigError

__all__ = ["PROVIDER", "ZOOKEEPER", "Client", "Origin", "Setting", "bootstrap", "jaas"]

# The config provider that reads secrets from the client files (config.providers).
PROVIDER = "mm1file"

# What a setting of the JVM clients means to mm2's copy, which assigns partitions (it joins no
# group), commits nothing through its consumers and writes the bytes it read: dropped, and why.
_CONSUMER_DROPPED = {
    "enable.auto.commit": "mm2 commits nothing through its consumers (progress.group.id does)",
    "auto.commit.interval.ms": "mm2 commits nothing through its consumers",
    "key.deserializer": "records are copied as bytes",
    "value.deserializer": "records are copied as bytes",
    "partition.assignment.strategy": "copy tasks are assigned partitions; they join no group",
    "heartbeat.interval.ms": "copy tasks join no group",
    "session.timeout.ms": "copy tasks join no group",
    "max.poll.interval.ms": "copy tasks join no group",
    "group.instance.id": "copy tasks join no group",
    "group.protocol": "copy tasks join no group",
    "exclude.internal.topics": "internal topics are never mirrored (topics.exclude)",
    "client.id": "mm2 names its clients after the flow (MirrorMaker 1 replaced it too)",
}
_PRODUCER_DROPPED = {
    "key.serializer": "records are copied as bytes",
    "value.serializer": "records are copied as bytes",
    "client.id": "mm2 names its clients after the flow",
    "producer.type": "positions are committed only once the target has the records, so "
    "sync and async mirror the same",
}
# Dropped with a warning: what they did cannot happen here.
_UNSUPPORTED = {
    "interceptor.classes": "Java interceptors cannot run in mm2",
    "partitioner.class": "records keep their source partition (MirrorMaker 1 partitioned "
    "them again on the target)",
    "transactional.id": "mm2 names its transactional ids after the flow",
}
# The old Scala clients' settings (Kafka 0.7 to 0.10) that the Java clients renamed.
_RENAMED = {
    "consumer": {
        "groupid": "group.id",
        "fetch.message.max.bytes": "max.partition.fetch.bytes",
        "socket.receive.buffer.bytes": "receive.buffer.bytes",
        "fetch.wait.max.ms": "fetch.max.wait.ms",
        "auto.commit.enable": "enable.auto.commit",
        "auto.commit.enabled": "enable.auto.commit",  # as some MirrorMaker 1 guides spell it
        "autocommit.enable": "enable.auto.commit",
    },
    "producer": {
        "metadata.broker.list": "bootstrap.servers",
        "broker.list": "bootstrap.servers",
        "request.required.acks": "acks",
        "message.send.max.retries": "retries",
        "queue.buffering.max.ms": "linger.ms",
        "queue.time": "linger.ms",
        "compression.codec": "compression.type",
        "topic.metadata.refresh.interval.ms": "metadata.max.age.ms",
        "socket.send.buffer.bytes": "send.buffer.bytes",
    },
}
ZOOKEEPER = {"zookeeper.connect", "zk.connect"}
# The old clients' settings with no Java twin: dropped with a warning.
_GONE = {
    "consumer": {
        "zk.connectiontimeout.ms",
        "zookeeper.connection.timeout.ms",
        "zk.sessiontimeout.ms",
        "zookeeper.session.timeout.ms",
        "zk.synctime.ms",
        "zookeeper.sync.time.ms",
        "consumer.timeout.ms",
        "shallow.iterator.enable",
        "rebalance.max.retries",
        "rebalance.retries.max",
        "rebalance.backoff.ms",
        "queued.max.message.chunks",
        "autocommit.interval.ms",
        "refresh.leader.backoff.ms",
        "dual.commit.enabled",
        "offsets.storage",
        "consumer.id",
        "num.consumer.fetchers",
        "mirror.topics.whitelist",
        "mirror.topics.blacklist",
        "mirror.consumer.numthreads",
    },
    "producer": {
        "zk.connectiontimeout.ms",
        "zookeeper.connection.timeout.ms",
        "serializer.class",
        "key.serializer.class",
        "queue.enqueueTimeout.ms",
        "queue.enqueue.timeout.ms",
        "queue.size",
        "queue.buffering.max.messages",
        "batch.num.messages",
        "block.on.buffer.full",
        "metadata.fetch.timeout.ms",
        "timeout.ms",
        "compressed.topics",
        "max.message.size",
        "reconnect.interval",
        "reconnect.time.interval.ms",
        "callback.handler",
        "event.handler",
    },
}
_CODECS = {"0": "none", "1": "gzip", "2": "snappy", "3": "lz4"}
_OFFSET_RESETS = {"smallest": "earliest", "largest": "latest"}
# Java constants the MirrorMaker 1 guides write where a number belongs.
_JAVA_CONSTANTS = {
    "Int.MaxValue": "2147483647",
    "Integer.MAX_VALUE": "2147483647",
    "Long.MaxValue": "9223372036854775807",
    "Long.MAX_VALUE": "9223372036854775807",
}


@dataclass(frozen=True)
class Origin:
    """Where a setting came from: a line of a client file, or a command-line flag (no file)."""

    key: str
    file: str | None = None
    line: int | None = None

    def __str__(self) -> str:
        if self.file is None:
            return self.key
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        return f"{where} {self.key}"


@dataclass(frozen=True)
class Setting:
    key: str
    value: str
    origin: Origin
    comment: str = ""


class Client:
    """One client file turned into cluster-wide and client settings of one alias."""

    def __init__(self, props: PropertiesFile, role: str, alias: str) -> None:
        self.props = props
        self.role = role
        self.alias = alias
        self.settings: list[Setting] = []
        self.notes: list[str] = []
        self.warnings: list[str] = []
        self.special: dict[str, Setting] = {}  # bootstrap.servers and group.id

    def origin(self, key: str) -> Origin:
        return Origin(key, self.props.path, self.props.line_of(key))

    def warn(self, key: str, text: str) -> None:
        self.warnings.append(f"{self.origin(key)}: {text}")

    def read(self) -> None:
        renamed = _RENAMED[self.role]
        for key, raw in self.props.values.items():
            value = raw.strip()
            name = renamed.get(key, key)
            if name != key:
                if name in self.props.values:
                    self.warn(key, f"the old name of {name}, which the file also sets: ignored")
                    continue
                self.warn(key, f"the old client's name of {name}; write {name} = {value}")
            self.take(key, name, value)

    def take(self, key: str, name: str, value: str) -> None:
        if name in ZOOKEEPER:
            self.notes.append(f"dropped {self.origin(key)}: mm2 reaches the brokers directly")
            return
        if name in _GONE[self.role]:
            self.warn(key, "a setting of the old Scala client with no effect here: ignored")
            return
        dropped = (_CONSUMER_DROPPED if self.role == "consumer" else _PRODUCER_DROPPED).get(name)
        if dropped is not None:
            self.notes.append(f"dropped {self.origin(key)} = {value}: {dropped}")
            return
        if name in _UNSUPPORTED:
            self.warn(key, f"ignored: {_UNSUPPORTED[name]}")
            return
        if value in _JAVA_CONSTANTS:
            self.warn(key, f"{value} is not a number; read as {_JAVA_CONSTANTS[value]}")
            value = _JAVA_CONSTANTS[value]
        if name == "compression.type" and value in _CODECS:
            value = _CODECS[value]
        if name == "auto.offset.reset" and value in _OFFSET_RESETS:
            self.warn(key, f"{value} is the old client's word for {_OFFSET_RESETS[value]}")
            value = _OFFSET_RESETS[value]
        if self.role == "producer" and self.producer_conflict(key, name, value):
            return
        if name in ("bootstrap.servers", "group.id"):
            self.special[name] = Setting(name, value, self.origin(key))
            return
        self.settings.append(self.setting(key, name, value))

    def producer_conflict(self, key: str, name: str, value: str) -> bool:
        """Settings that contradict the idempotent (and transactional) writes mm2 makes."""
        problem = None
        if name == "acks" and value.lower() not in ("all", "-1"):
            problem = f"acks={value}: mm2 writes with acks=all (idempotent writes need it)"
        elif name == "enable.idempotence" and value.lower() == "false":
            problem = "mm2's writes are always idempotent"
        elif name == "max.in.flight.requests.per.connection" and value.isdigit() and int(value) > 5:
            problem = f"{value} is more than idempotent writes allow (5)"
        if problem is not None:
            self.warn(key, f"ignored: {problem}")
        return problem is not None

    def setting(self, key: str, name: str, value: str) -> Setting:
        scoped = name in CLIENT_CONFIG_NAMES  # the cluster's: every client of it needs them
        target = f"{self.alias}.{name}" if scoped else f"{self.alias}.{self.role}.{name}"
        comment = ""
        path = Path(self.props.path).resolve()
        if is_password(name) and not {":", "}"} & set(str(path)):
            # Secrets stay in the client file: the written mm2.properties refers to them.
            value = f"${{{PROVIDER}:{path}:{key}}}"
            comment = f"{key} stays in {self.props.path}"
        return Setting(target, value, self.origin(key), comment)


def jaas(client: Client, jaas_file: str | None) -> None:
    """A SASL client without sasl.jaas.config logs in with the KafkaClient entry of the JVM's
    JAAS file, as MirrorMaker 1's clients did; mm2's clients need it as sasl.jaas.config."""
    protocol = client.props.values.get("security.protocol", "").strip().upper()
    if not protocol.startswith("SASL") or "sasl.jaas.config" in client.props.values:
        return
    if jaas_file is None:
        client.warn(
            "security.protocol",
            "SASL without sasl.jaas.config: add it to the file (the KafkaClient entry of the "
            "JAAS file MirrorMaker 1 was given), or set KAFKA_OPTS=-Djava.security.auth.login."
            "config=<file> as for MirrorMaker 1",
        )
        return
    try:
        text = Path(jaas_file).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(
            f"cannot read the JAAS file ({exc.strerror or exc})",
            file=jaas_file,
            key="-Djava.security.auth.login.config",
        ) from None
    entry = re.search(r"\bKafkaClient\s*\{(.*?)\}\s*;", text, re.S)
    if entry is None:
        raise ConfigError(
            "no KafkaClient entry, which the clients log in with; add one, or sasl.jaas.config "
            f"to {client.props.path}",
            file=jaas_file,
            key="KafkaClient",
        )
    client.settings.append(
        Setting(
            f"{client.alias}.sasl.jaas.config",
            " ".join(entry.group(1).split()),
            Origin("KafkaClient", jaas_file),
            f"The KafkaClient entry of {jaas_file}",
        )
    )


def bootstrap(client: Client, what: str) -> Setting:
    found = client.special.get("bootstrap.servers")
    if found is not None and found.value:
        return found
    zk = next((k for k in client.props.values if k in ZOOKEEPER), None)
    if zk is not None:
        raise ConfigError(
            f"{zk} but no bootstrap.servers: the ZooKeeper-based client is gone (MirrorMaker 1 "
            f"itself reads through the brokers since Kafka 2.0); add bootstrap.servers = "
            f"host:port[,host:port] of {what}",
            file=client.props.path,
            line=client.props.line_of(zk),
            key=zk,
        )
    raise ConfigError(
        f"no bootstrap.servers; add bootstrap.servers = host:port[,host:port] of {what}",
        file=client.props.path,
        key="bootstrap.servers",
    )
