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

What each client setting becomes is in mm2.config.mm1_client.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

import javaproperties

from mm2.config.mm1_client import PROVIDER, Client, Origin, Setting, bootstrap, jaas
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
_FILEPROVIDER = "org.apache.kafka.common.config.provider.FileConfigProvider"


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
    consumer = Client(consumer_file, "consumer", source)
    consumer.read()
    producer = Client(producer_file, "producer", target)
    producer.read()
    for client in (consumer, producer):
        jaas(client, options.jaas_file)
    source_bootstrap = bootstrap(consumer, "the source cluster's brokers")
    target_bootstrap = bootstrap(producer, "the target cluster's brokers")
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
    if any("${" + PROVIDER + ":" in s.value for b in blocks for s in b.settings):
        blocks.append(
            Block(
                "Secrets are read from the client files when the mirror starts",
                (
                    Setting("config.providers", PROVIDER, Origin("--consumer.config")),
                    Setting(
                        f"config.providers.{PROVIDER}.class",
                        _FILEPROVIDER,
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
