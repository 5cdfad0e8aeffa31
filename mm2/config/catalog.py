"""What each key of mm2.properties means, one line per key, and where it is set.

The text of docs/configuration-reference.md (`make docs`, mm2.cli.docgen): the keys are those of
mm2.config.names and mm2.config.keys, and tests/unit/config/test_catalog.py fails when a key
there has no line here. Types and defaults are not written here: they come from the
definitions that check and read the values (names.TYPES, keys.TOP_LEVEL, settings).

`where` says where a key is set: "process" and "rest" at the top level only, "cluster" as
`<alias>.<key>`, "flow" as `<source>-><target>.<key>` or at the top level for every flow,
"worker" as `<target>.<key>`, at the top level or (mm2) per flow. `ours` marks a key Apache
MM2 does not read; `apache` is Apache MM2's default where it differs from mm2's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, NamedTuple

__all__ = ["CATALOG", "KeyDoc", "Where"]

Where = Literal["process", "rest", "cluster", "flow", "worker"]
_UNUSED = "accepted and checked as Apache checks it; mm2 does not act on it"
_TASKS = "set by the connector for each of its tasks, not in the file"


class KeyDoc(NamedTuple):
    where: Where
    meaning: str
    ours: bool = False
    apache: str = ""


def _keys(
    where: Where,
    meanings: Mapping[str, str],
    *,
    ours: bool = False,
    apache: Mapping[str, str] | None = None,
) -> dict[str, KeyDoc]:
    """The lines of keys all set `where`; `apache` has Apache's default where it differs."""
    apache = apache or {}
    return {
        key: KeyDoc(where, meaning, ours, apache.get(key, "")) for key, meaning in meanings.items()
    }


_PROCESS = _keys(
    "process",
    {
        "clusters": "the aliases of the clusters the file describes, comma-separated",
        "config.providers": (
            "names of the config providers (`env`, `file`, `dir`) that `${...}` values use"
        ),
        "java.security.auth.login.config": (
            "a JAAS file: the REST listener's Basic auth users, and SASL logins"
        ),
    },
)
_OURS_PROCESS = _keys(
    "process",
    {
        "mm2.state.dir": "local caches and REST changes; no source position is kept here",
        "mm2.configs.topic": "the topic that elects the leader and keeps REST changes",
        "mm2.configs.cluster": (
            "the cluster whose config topic keeps REST changes; unset: the first flow's target"
        ),
        "mm2.leader.session.timeout.ms": (
            "how long a leader that stopped answering keeps its flows before a standby takes them"
        ),
        "mm2.rest.secrets.key": "the passphrase that seals secrets given over REST",
    },
    ours=True,
)
_REST = _keys(
    "rest",
    {
        "listeners": "the REST API's listeners, `http://host:port` or `https://...`",
        "rest.advertised.host.name": "the host name other processes reach this one at",
        "rest.advertised.port": "the port other processes reach this one at",
        "rest.advertised.listener": "the scheme other processes reach this one with",
        "rest.extension.classes": "REST extensions; only Basic auth exists",
        "access.control.allow.origin": "the origins a browser may call the API from",
        "access.control.allow.methods": "the methods a cross-origin call may use",
        "response.http.headers.config": "headers added to every answer",
        "ssl.client.auth": "whether an https listener asks clients for a certificate",
        "listeners.https.ssl.client.auth": "`ssl.client.auth` for the https listener only",
        "listeners.https.ssl.keystore.type": "the https listener's key store type (PEM only)",
        "dedicated.mode.enable.internal.rest": (
            "Apache's switch for its internal REST server; mm2's API is always on"
        ),
    },
)
_CLUSTER = _keys(
    "cluster",
    {
        "bootstrap.servers": "the cluster's brokers, `host:port[,host:port]`",
        "security.protocol": "how the cluster's clients connect",
    },
)
_OURS_CLUSTER = _keys(
    "cluster",
    {
        "schema.registry.url": (
            "the cluster's Schema Registry; set on both clusters, a flow copies subjects"
        ),
        "schema.registry.basic.auth.credentials.source": (
            "where the registry's Basic auth credentials come from"
        ),
        "schema.registry.basic.auth.user.info": "the registry's Basic auth `user:password`",
        "schema.registry.ssl.ca.location": (
            "the CA certificates (PEM) the registry is checked against"
        ),
        "schema.registry.ssl.certificate.location": "the client certificate (PEM) for the registry",
        "schema.registry.ssl.key.location": "the client key (PEM) for the registry",
        "schema.registry.ssl.key.password": "the password of the registry client key",
        "schema.registry.requests.per.second": "the most requests a second sent to the registry",
        "schema.registry.timeout.ms": "how long a registry request may take",
    },
    ours=True,
)
_FLOW = _keys(
    "flow",
    {
        # Connect's connector keys
        "name": "the connector's name; mm2 sets it",
        "connector.class": "the connector's class; mm2 sets it",
        "tasks.max": "the most copy tasks of the flow; partitions are dealt over them",
        "tasks.max.enforce": _UNUSED,
        "key.converter": "Connect's converter; records are copied as bytes",
        "value.converter": "Connect's converter; records are copied as bytes",
        "header.converter": "Connect's converter; records are copied as bytes",
        "config.action.reload": _UNUSED,
        "transforms": _UNUSED,
        "predicates": _UNUSED,
        "errors.retry.timeout": _UNUSED,
        "errors.retry.delay.max.ms": _UNUSED,
        "errors.tolerance": _UNUSED,
        "errors.log.enable": _UNUSED,
        "errors.log.include.messages": _UNUSED,
        "exactly.once.support": (
            "`required` refuses a source consumer that reads uncommitted records"
        ),
        "transaction.boundary": "Connect's choice of when a source task commits",
        "transaction.boundary.interval.ms": (
            "a copy task commits its records and positions at least this often (under a "
            "backlog up to ten times less often)"
        ),
        "offsets.storage.topic": _UNUSED,
        # every MirrorMaker connector
        "enabled": "`true` turns the flow on (`A->B.enabled`)",
        "source.cluster.alias": "the flow's source cluster; mm2 sets it",
        "target.cluster.alias": "the flow's target cluster; mm2 sets it",
        "admin.timeout.ms": _UNUSED,
        "replication.policy.class": (
            "how remote topics are named: an Apache class name or a Python path"
        ),
        "replication.policy.separator": (
            "the text between the source alias and the topic in a remote topic's name"
        ),
        "replication.policy.internal.topic.separator.enabled": (
            "whether internal topics' names use the separator too"
        ),
        "forwarding.admin.class": _UNUSED,
        "metric.reporters": _UNUSED,
        "add.source.alias.to.metrics": _UNUSED,
        # MirrorSourceConnector
        "topics": "the source topics to copy (Java regexes, comma-separated)",
        "topics.exclude": "source topics never copied, even when `topics` matches",
        "topics.blacklist": "the old name of `topics.exclude`",
        "config.properties.exclude": "topic configs never copied (Java regexes)",
        "config.properties.blacklist": "the old name of `config.properties.exclude`",
        "topic.filter.class": "the class that picks the topics to copy",
        "config.property.filter.class": "the class that picks the topic configs to copy",
        "use.defaults.from": (
            "whose defaults a topic config left at its default takes (`source` or `target`)"
        ),
        "consumer.poll.timeout.ms": _UNUSED,
        "refresh.topics.enabled": "whether new topics and partitions are looked for",
        "refresh.topics.interval.seconds": (
            "how often the source is listed for new topics and partitions"
        ),
        "sync.topic.configs.enabled": "whether topic configs are copied",
        "sync.topic.configs.interval.seconds": "how often topic configs are copied",
        "sync.topic.acls.enabled": "whether topics' ACLs are copied",
        "sync.topic.acls.interval.seconds": "how often topics' ACLs are copied",
        "replication.factor": "replicas of each topic mm2 creates on the target",
        "offset-syncs.topic.replication.factor": "replicas of the offset-syncs topic",
        "offset.lag.max": (
            "how far a partition's copy runs ahead of its last offset sync before the next"
        ),
        "offset-syncs.topic.location": "which cluster of the flow holds the offset-syncs topic",
        "emit.offset-syncs.enabled": "whether offset syncs are written (checkpoints need them)",
        "heartbeats.replication.enabled": (
            "whether heartbeats topics are copied whatever `topics` says"
        ),
        "metric.names.formats": (
            "which names of Apache's MirrorMaker metrics /metrics serves: `legacy`, `new` "
            "(KIP-1280) or both; mm2's own names always"
        ),
        "use.incremental.alter.configs": _UNUSED,
        "task.assigned.partitions": _TASKS,
        "task.index": _TASKS,
        # MirrorCheckpointConnector
        "groups": "the consumer groups to checkpoint (Java regexes)",
        "groups.exclude": "consumer groups never checkpointed",
        "groups.blacklist": "the old name of `groups.exclude`",
        "group.filter.class": "the class that picks the groups to checkpoint",
        "group.mirroring.policy.class": "the class that names a source group on the target",
        "refresh.groups.enabled": "whether new consumer groups are looked for",
        "refresh.groups.interval.seconds": "how often the source is listed for consumer groups",
        "emit.checkpoints.enabled": "whether checkpoints are written to the target",
        "emit.checkpoints.interval.seconds": "how often checkpoints are written",
        "sync.group.offsets.enabled": (
            "whether translated offsets are committed into target groups without members"
        ),
        "sync.group.offsets.interval.seconds": (
            "how often translated offsets are committed into target groups"
        ),
        "checkpoints.topic.replication.factor": "replicas of the checkpoints topic",
        "task.assigned.groups": _TASKS,
        # MirrorHeartbeatConnector
        "emit.heartbeats.enabled": "whether heartbeats are written",
        "emit.heartbeats.interval.seconds": "how often a heartbeat is written",
        "heartbeats.topic.replication.factor": "replicas of the heartbeats topic",
    },
    apache={
        "transaction.boundary.interval.ms": "`offset.flush.interval.ms`",
    },
)
_OURS_FLOW = _keys(
    "flow",
    {
        "sync.share.group.offsets.enabled": (
            "whether share groups' start offsets are set, translated, in target groups without "
            "members"
        ),
        "sync.share.group.offsets.interval.seconds": (
            "how often share groups' start offsets are set on the target"
        ),
        "skip.oversized.records": "skip (and count) records larger than the target takes, not fail",
        "progress.group.id": (
            "a source consumer group that follows the flow's positions (MM1's view)"
        ),
        "progress.group.commit.interval.ms": (
            "how often `progress.group.id`'s offsets are committed"
        ),
        "pipeline.trigger.interval.ms": (
            "accepted so older files load; unused since copy tasks stream"
        ),
        "pipeline.max.records.per.partition": (
            "accepted so older files load; unused since copy tasks stream"
        ),
        "schemas": "the source registry's subjects to copy (regexes)",
        "schemas.exclude": "subjects never copied",
        "sync.schemas.enabled": "whether subjects are copied",
        "sync.schemas.interval.seconds": "how often subjects are copied",
        "schema.ids.keys": "whether record keys' schema IDs are rewritten",
        "schema.ids.values": "whether record values' schema IDs are rewritten",
        "schema.ids.wait.ms": (
            "how long a partition held at a record whose schema ID is not mapped yet waits before "
            "a WARN names it (the partition stays held; the others go on)"
        ),
        "key.subject.name.strategy": (
            "which subject describes a topic's keys (a strategy's class name)"
        ),
        "value.subject.name.strategy": (
            "which subject describes a topic's values (a strategy's class name)"
        ),
    },
    ours=True,
)
_WORKER = _keys(
    "worker",
    {
        "exactly.once.source.support": (
            "`enabled`: records and positions in one transaction; `disabled`: at least once"
        ),
        "offset.storage.topic": "the topic on the target that keeps source positions",
        "offset.storage.partitions": "partitions of the offsets topic (`offset.storage.topic`)",
        "offset.storage.replication.factor": (
            "replicas of the offsets topic; unset: 3, or the broker's default on fewer brokers"
        ),
        "config.storage.topic": (
            "Connect's config topic; mm2 keeps its own (`mm2.configs.topic`) instead"
        ),
        "config.storage.replication.factor": "replicas of `mm2.configs.topic` when mm2 creates it",
        "status.storage.topic": "Connect's status topic; mm2 keeps none",
        "status.storage.partitions": "Connect's; mm2 keeps no status topic",
        "status.storage.replication.factor": "Connect's; mm2 keeps no status topic",
    },
    apache={
        "exactly.once.source.support": "`disabled`",
        "offset.storage.replication.factor": "`3`",
    },
)

CATALOG: dict[str, KeyDoc] = {
    **_PROCESS,
    **_OURS_PROCESS,
    **_REST,
    **_CLUSTER,
    **_OURS_CLUSTER,
    **_FLOW,
    **_OURS_FLOW,
    **_WORKER,
}
