"""MirrorMaker 1's command line and client files as the one mm2.properties flow it ran.

`migrate(options)` reads `--consumer.config` and `--producer.config` and returns the settings
of a flow with MirrorMaker 1's behaviour: topics keep their names (the identity policy), the
whitelist is `topics`, `--num.streams` is `tasks.max`, the consumer group of `consumer.config`
receives the mirror's progress on the source (`progress.group.id`), and nothing MM1 never did
runs unless asked for (heartbeats, checkpoints, offset syncs, topic config and ACL sync).
Each setting remembers the file line or flag it came from, so that an error found in the
result names what the user wrote (`Migration.error`).

The clusters are named after the group, MirrorMaker 1's name for a mirror (`<group>-source`,
`<group>-target`): two mirrors with different groups into one cluster then keep apart positions
topics, transactional ids and leader elections, and two processes with the same group share
one mirror, one leading and one standing by, as MM1 processes of one group shared the work.

Longer than most modules: half of it is the tables of what every MirrorMaker 1-era client
setting becomes, which read best in one place.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

import javaproperties

from mm2.config.model import is_password
from mm2.config.names import CLIENT_CONFIG_NAMES
from mm2.config.properties import PropertiesFile, read_properties
from mm2.errors import ConfigError
from mm2.policies.filter import TOPICS_EXCLUDE_DEFAULT

__all__ = [
    "IDENTITY_POLICY",
    "Block",
    "Migration",
    "MirrorMaker1Options",
    "Origin",
    "Setting",
    "alias_of",
    "command_line",
    "migrate",
    "mm1_regex",
]

IDENTITY_POLICY = "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"
_FILE_PROVIDER = "org.apache.kafka.common.config.provider.FileConfigProvider"
_PROVIDER = "mm1file"

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
_ZOOKEEPER = {"zookeeper.connect", "zk.connect"}
# The old clients' settings with no Java twin: dropped with a warning.
_GONE = {
    "consumer": {
        "zk.connectiontimeout.ms", "zookeeper.connection.timeout.ms", "zk.sessiontimeout.ms",
        "zookeeper.session.timeout.ms", "zk.synctime.ms", "zookeeper.sync.time.ms",
        "consumer.timeout.ms", "shallow.iterator.enable", "rebalance.max.retries",
        "rebalance.retries.max", "rebalance.backoff.ms", "queued.max.message.chunks",
        "autocommit.interval.ms", "refresh.leader.backoff.ms", "dual.commit.enabled",
        "offsets.storage", "consumer.id", "num.consumer.fetchers", "mirror.topics.whitelist",
        "mirror.topics.blacklist", "mirror.consumer.numthreads",
    },
    "producer": {
        "zk.connectiontimeout.ms", "zookeeper.connection.timeout.ms", "serializer.class",
        "key.serializer.class", "queue.enqueueTimeout.ms", "queue.enqueue.timeout.ms",
        "queue.size", "queue.buffering.max.messages", "batch.num.messages",
        "block.on.buffer.full", "metadata.fetch.timeout.ms", "timeout.ms", "compressed.topics",
        "max.message.size", "reconnect.interval", "reconnect.time.interval.ms",
        "callback.handler", "event.handler",
    },
}  # fmt: skip
_CODECS = {"0": "none", "1": "gzip", "2": "snappy", "3": "lz4"}
_OFFSET_RESETS = {"smallest": "earliest", "largest": "latest"}
# Java constants the MirrorMaker 1 guides write where a number belongs.
_JAVA_CONSTANTS = {
    "Int.MaxValue": "2147483647",
    "Integer.MAX_VALUE": "2147483647",
    "Long.MaxValue": "9223372036854775807",
    "Long.MAX_VALUE": "9223372036854775807",
}
_ALIAS_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_ESCAPES = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\f": "\\f"}


@dataclass(frozen=True)
class MirrorMaker1Options:
    """What a `kafka-mirror-maker` command line asks for (defaults are MirrorMaker 1's)."""

    consumer_config: str
    producer_config: str
    include: str | None = None
    exclude: str | None = None
    num_streams: int = 1
    abort_on_send_failure: bool = True
    offset_commit_interval_ms: int = 60_000
    overrides: tuple[tuple[str, str], ...] = ()
    command: str = ""
    # -Djava.security.auth.login.config (in KAFKA_OPTS): its KafkaClient entry logs both in
    jaas_file: str | None = None


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


@dataclass(frozen=True)
class Block:
    """A titled group of settings in the written file; `notes` become comment lines."""

    title: str
    settings: tuple[Setting, ...]
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Migration:
    """The flow: its blocks of settings, and what the user should know (`warnings`)."""

    source: str
    target: str
    group: str
    blocks: tuple[Block, ...]
    warnings: tuple[str, ...] = ()
    header: tuple[str, ...] = field(default_factory=tuple)

    def settings(self) -> list[Setting]:
        return [s for b in self.blocks for s in b.settings]

    def values(self) -> dict[str, str]:
        return {s.key: s.value for s in self.settings()}

    def text(self) -> str:
        """The mm2.properties file, commented: where each setting came from and why."""
        out = [f"# {line}" if line else "#" for line in self.header]
        for block in self.blocks:
            out += ["", f"# {block.title}"]
            out += [f"#   {note}" for note in block.notes]
            for s in block.settings:
                if s.comment:
                    out.append(f"# {s.comment}")
                out.append(f"{javaproperties.escape(s.key)} = {_escape_value(s.value)}")
        return "\n".join(out) + "\n"

    def error(self, exc: ConfigError) -> ConfigError:
        """`exc`, found in the written file, re-aimed at the flag or file line it came from."""
        setting = next((s for s in self.settings() if s.key == exc.key), None)
        if setting is None:
            return exc
        o = setting.origin
        if o.file is None:  # a flag: "--whitelist: <problem>"
            return ConfigError(exc.detail, key=o.key)
        return ConfigError(exc.detail, file=o.file, line=o.line, key=o.key)


def _escape_value(value: str) -> str:
    """A value as java.util.Properties reads it back (ISO-8859-1, so other characters as
    \\uXXXX); unlike javaproperties' escaping, `:` and `=` stay readable."""
    out = []
    for char in value:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif " " <= char <= "~":
            out.append(char)
        else:
            out.append("".join(f"\\u{unit:04x}" for unit in _utf16(char)))
    text = "".join(out)
    return "\\" + text if text.startswith(" ") else text


def _utf16(char: str) -> list[int]:
    data = char.encode("utf-16-be")
    return [int.from_bytes(data[i : i + 2], "big") for i in range(0, len(data), 2)]


def mm1_regex(raw: str) -> str:
    """A whitelist as MirrorMaker 1 (kafka TopicFilter) read it: trimmed, a comma meaning `|`,
    spaces removed, and the quotes a properties file or shell may leave around it dropped."""
    regex = raw.strip().replace(",", "|").replace(" ", "")
    return re.sub(r"[\"']+$", "", re.sub(r"^[\"']+", "", regex))


def alias_of(group: str) -> str:
    """A cluster alias made of the group id (letters, digits, `_` and `-`)."""
    return _ALIAS_UNSAFE.sub("_", group.strip())


class _Client:
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
        if name in _ZOOKEEPER:
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
            value = f"${{{_PROVIDER}:{path}:{key}}}"
            comment = f"{key} stays in {self.props.path}"
        return Setting(target, value, self.origin(key), comment)


def _read(path: str, flag: str) -> PropertiesFile:
    try:
        return read_properties(path)
    except ConfigError as exc:
        raise ConfigError(exc.detail.split(";")[0], file=path, key=flag) from None


def migrate(options: MirrorMaker1Options) -> Migration:
    """The mm2.properties flow for `options`; ConfigError names the flag or file line at fault."""
    consumer_file = _read(options.consumer_config, "--consumer.config")
    producer_file = _read(options.producer_config, "--producer.config")
    group = _group(consumer_file)
    source, target = f"{alias_of(group.value)}-source", f"{alias_of(group.value)}-target"
    consumer = _Client(consumer_file, "consumer", source)
    consumer.read()
    producer = _Client(producer_file, "producer", target)
    producer.read()
    for client in (consumer, producer):
        _jaas(client, options.jaas_file)
    source_bootstrap = _bootstrap(consumer, "the source cluster's brokers")
    target_bootstrap = _bootstrap(producer, "the target cluster's brokers")
    warnings = consumer.warnings + producer.warnings
    consumer_settings = consumer.settings
    if not any(s.key.endswith(".auto.offset.reset") for s in consumer_settings):
        consumer_settings.append(
            Setting(
                f"{source}.consumer.auto.offset.reset",
                "latest",
                Origin("auto.offset.reset", options.consumer_config),
                "MirrorMaker 1's consumer default: a partition the group never committed starts "
                "at its end (earliest copies what the topics hold already)",
            )
        )
    flags = _behaviour(options, source, target, group, warnings)
    blocks = [
        Block(
            "The clusters, named after the consumer group (MirrorMaker 1's name for a mirror)",
            (
                Setting("clusters", f"{source}, {target}", Origin("group.id")),
                replace(source_bootstrap, key=f"{source}.bootstrap.servers"),
                replace(target_bootstrap, key=f"{target}.bootstrap.servers"),
                Setting(f"{source}->{target}.enabled", "true", Origin("group.id")),
            ),
        ),
        Block("MirrorMaker 1's behaviour", tuple(flags)),
        Block(
            "This mirror's own state, apart from other mirrors' on the same clusters and host",
            (
                Setting("mm2.state.dir", f"mm2-state/{alias_of(group.value)}", Origin("group.id")),
                Setting(
                    "mm2.configs.topic",
                    f"mm2-configs.{alias_of(group.value)}.internal",
                    Origin("group.id"),
                ),
            ),
        ),
        Block(
            f"From {options.consumer_config} (the source cluster)",
            tuple(consumer_settings),
            tuple(consumer.notes),
        ),
        Block(
            f"From {options.producer_config} (the target cluster)",
            tuple(producer.settings),
            tuple(producer.notes),
        ),
    ]
    if any("${" + _PROVIDER + ":" in s.value for b in blocks for s in b.settings):
        blocks.append(
            Block(
                "Secrets are read from the client files when the mirror starts",
                (
                    Setting("config.providers", _PROVIDER, Origin("--consumer.config")),
                    Setting(
                        f"config.providers.{_PROVIDER}.class",
                        _FILE_PROVIDER,
                        Origin("--consumer.config"),
                    ),
                ),
            )
        )
    blocks = _override(blocks, options.overrides)
    header = (
        "mm2.properties equivalent to the MirrorMaker 1 command line",
        f"  {options.command}" if options.command else "",
        "Run it with: connect-mirror-maker <this file>",
    )
    return Migration(source, target, group.value, tuple(blocks), tuple(warnings), header)


def _group(props: PropertiesFile) -> Setting:
    for key in ("group.id", "groupid"):
        value = props.values.get(key, "").strip()
        if value:
            return Setting("progress.group.id", value, Origin(key, props.path, props.line_of(key)))
    raise ConfigError(
        "no group.id: MirrorMaker 1 needs one (it names the mirror, and the mirror's progress "
        "is committed to it on the source); add group.id = <name>",
        file=props.path,
        key="group.id",
    )


def _jaas(client: _Client, jaas_file: str | None) -> None:
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


def _bootstrap(client: _Client, what: str) -> Setting:
    found = client.special.get("bootstrap.servers")
    if found is not None and found.value:
        return found
    zk = next((k for k in client.props.values if k in _ZOOKEEPER), None)
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


def _behaviour(
    options: MirrorMaker1Options,
    source: str,
    target: str,
    group: Setting,
    warnings: list[str],
) -> list[Setting]:
    def flag(name: str, key: str, value: str, comment: str = "") -> Setting:
        return Setting(key, value, Origin(name), comment)

    def fixed(key: str, value: str, comment: str = "") -> Setting:
        return flag("kafka-mirror-maker", key, value, comment)

    include = options.include if options.include is not None else ".*"
    abort = (
        "--abort.on.send.failure true: a record the target refuses stops the copy task"
        if options.abort_on_send_failure
        else "--abort.on.send.failure false: a record too large for the target is skipped"
    )
    found = [
        fixed("replication.policy.class", IDENTITY_POLICY, "Target topics keep their source names"),
        flag("--whitelist", "topics", mm1_regex(include), "--include/--whitelist"),
    ]
    if options.exclude is not None:
        found.append(
            flag(
                "--blacklist",
                "topics.exclude",
                f"{TOPICS_EXCLUDE_DEFAULT}, {mm1_regex(options.exclude)}",
                "--blacklist, besides the internal topics mm2 never mirrors",
            )
        )
    found += [
        flag("--num.streams", "tasks.max", str(options.num_streams), "--num.streams"),
        replace(group, comment="The group of --consumer.config receives the mirror's progress"),
        flag(
            "--offset.commit.interval.ms",
            "progress.group.commit.interval.ms",
            str(options.offset_commit_interval_ms),
            "--offset.commit.interval.ms",
        ),
        flag(
            "--abort.on.send.failure",
            "skip.oversized.records",
            "false" if options.abort_on_send_failure else "true",
            abort,
        ),
        fixed("emit.heartbeats.enabled", "false", "Nothing MirrorMaker 1 did not do"),
        fixed("emit.checkpoints.enabled", "false"),
        # Only the whitelisted topics: not the `heartbeats` topic another mirror left on the source.
        fixed("heartbeats.replication.enabled", "false"),
        fixed("emit.offset-syncs.enabled", "false"),
        fixed("sync.topic.configs.enabled", "false"),
        fixed("sync.topic.acls.enabled", "false"),
        fixed(
            "replication.factor",
            "-1",
            "New target topics get the broker's default replication, as auto-created ones did",
        ),
    ]
    if not options.abort_on_send_failure:
        warnings.append(
            "--abort.on.send.failure false: mm2 skips (and counts) records too large for the "
            "target; other send failures (authorization, a missing topic) still stop the copy "
            "task, which is restarted, rather than dropping records as MirrorMaker 1 did"
        )
    return found


def _override(blocks: list[Block], overrides: Iterable[tuple[str, str]]) -> list[Block]:
    """`--set KEY=VALUE`: replaces the setting of that key where it is, else joins the end."""
    pending: Mapping[str, str] = dict(overrides)
    if not pending:
        return blocks
    done: set[str] = set()
    out = []
    for block in blocks:
        settings = []
        for s in block.settings:
            if s.key in pending:
                origin = Origin(f"--set {s.key}")
                settings.append(Setting(s.key, pending[s.key], origin, f"--set {s.key}"))
                done.add(s.key)
            else:
                settings.append(s)
        out.append(replace(block, settings=tuple(settings)))
    extra = tuple(Setting(k, v, Origin(f"--set {k}")) for k, v in pending.items() if k not in done)
    if extra:
        out.append(Block("--set", extra))
    return out


def command_line(prog: str, argv: Iterable[str]) -> str:
    return shlex.join([prog, *argv])
