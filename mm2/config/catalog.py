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


_PROCESS: dict[str, KeyDoc] = {
    "clusters": KeyDoc(
        "process", "the aliases of the clusters the file describes, comma-separated"
    ),
    "config.providers": KeyDoc(
        "process", "names of the config providers (`env`, `file`, `dir`) that `${...}` values use"
    ),
    "java.security.auth.login.config": KeyDoc(
        "process", "a JAAS file: the REST listener's Basic auth users, and SASL logins"
    ),
    "mm2.state.dir": KeyDoc(
        "process",
        "local caches and REST changes; no source position is kept here",
        ours=True,
    ),
    "mm2.configs.topic": KeyDoc(
        "process", "the topic that elects the leader and keeps REST changes", ours=True
    ),
    "mm2.configs.cluster": KeyDoc(
        "process",
        "the cluster whose config topic keeps REST changes; unset: the first flow's target",
        ours=True,
    ),
    "mm2.leader.session.timeout.ms": KeyDoc(
        "process",
        "how long a leader that stopped answering keeps its flows before a standby takes them",
        ours=True,
    ),
    "mm2.rest.secrets.key": KeyDoc(
        "process", "the passphrase that seals secrets given over REST", ours=True
    ),
}
_REST: dict[str, KeyDoc] = {
    "listeners": KeyDoc("rest", "the REST API's listeners, `http://host:port` or `https://...`"),
    "rest.advertised.host.name": KeyDoc("rest", "the host name other processes reach this one at"),
    "rest.advertised.port": KeyDoc("rest", "the port other processes reach this one at"),
    "rest.advertised.listener": KeyDoc("rest", "the scheme other processes reach this one with"),
    "rest.extension.classes": KeyDoc("rest", "REST extensions; only Basic auth exists"),
    "access.control.allow.origin": KeyDoc("rest", "the origins a browser may call the API from"),
    "access.control.allow.methods": KeyDoc("rest", "the methods a cross-origin call may use"),
    "response.http.headers.config": KeyDoc("rest", "headers added to every answer"),
    "ssl.client.auth": KeyDoc("rest", "whether an https listener asks clients for a certificate"),
    "listeners.https.ssl.client.auth": KeyDoc(
        "rest", "`ssl.client.auth` for the https listener only"
    ),
    "listeners.https.ssl.keystore.type": KeyDoc(
        "rest", "the https listener's key store type (PEM only)"
    ),
    "dedicated.mode.enable.internal.rest": KeyDoc(
        "rest", "Apache's switch for its internal REST server; mm2's API is always on"
    ),
}
_CLUSTER: dict[str, KeyDoc] = {
    "bootstrap.servers": KeyDoc("cluster", "the cluster's brokers, `host:port[,host:port]`"),
    "security.protocol": KeyDoc("cluster", "how the cluster's clients connect"),
    "schema.registry.url": KeyDoc(
        "cluster",
        "the cluster's Schema Registry; set on both clusters, a flow copies subjects",
        ours=True,
    ),
    "schema.registry.basic.auth.credentials.source": KeyDoc(
        "cluster", "where the registry's Basic auth credentials come from", ours=True
    ),
    "schema.registry.basic.auth.user.info": KeyDoc(
        "cluster", "the registry's Basic auth `user:password`", ours=True
    ),
    "schema.registry.ssl.ca.location": KeyDoc(
        "cluster", "the CA certificates (PEM) the registry is checked against", ours=True
    ),
    "schema.registry.ssl.certificate.location": KeyDoc(
        "cluster", "the client certificate (PEM) for the registry", ours=True
    ),
    "schema.registry.ssl.key.location": KeyDoc(
        "cluster", "the client key (PEM) for the registry", ours=True
    ),
    "schema.registry.ssl.key.password": KeyDoc(
        "cluster", "the password of the registry client key", ours=True
    ),
    "schema.registry.requests.per.second": KeyDoc(
        "cluster", "the most requests a second sent to the registry", ours=True
    ),
    "schema.registry.timeout.ms": KeyDoc(
        "cluster", "how long a registry request may take", ours=True
    ),
}
_FLOW: dict[str, KeyDoc] = {
    # Connect's connector keys
    "name": KeyDoc("flow", "the connector's name; mm2 sets it"),
    "connector.class": KeyDoc("flow", "the connector's class; mm2 sets it"),
    "tasks.max": KeyDoc("flow", "the most copy tasks of the flow; partitions are dealt over them"),
    "tasks.max.enforce": KeyDoc("flow", _UNUSED),
    "key.converter": KeyDoc("flow", "Connect's converter; records are copied as bytes"),
    "value.converter": KeyDoc("flow", "Connect's converter; records are copied as bytes"),
    "header.converter": KeyDoc("flow", "Connect's converter; records are copied as bytes"),
    "config.action.reload": KeyDoc("flow", _UNUSED),
    "transforms": KeyDoc("flow", _UNUSED),
    "predicates": KeyDoc("flow", _UNUSED),
    "errors.retry.timeout": KeyDoc("flow", _UNUSED),
    "errors.retry.delay.max.ms": KeyDoc("flow", _UNUSED),
    "errors.tolerance": KeyDoc("flow", _UNUSED),
    "errors.log.enable": KeyDoc("flow", _UNUSED),
    "errors.log.include.messages": KeyDoc("flow", _UNUSED),
    "exactly.once.support": KeyDoc(
        "flow", "`required` refuses a source consumer that reads uncommitted records"
    ),
    "transaction.boundary": KeyDoc("flow", "Connect's choice of when a source task commits"),
    "transaction.boundary.interval.ms": KeyDoc(
        "flow",
        "a copy task commits its records and positions at least this often",
        apache="`offset.flush.interval.ms`",
    ),
    "offsets.storage.topic": KeyDoc("flow", _UNUSED),
    # every MirrorMaker connector
    "enabled": KeyDoc("flow", "`true` turns the flow on (`A->B.enabled`)"),
    "source.cluster.alias": KeyDoc("flow", "the flow's source cluster; mm2 sets it"),
    "target.cluster.alias": KeyDoc("flow", "the flow's target cluster; mm2 sets it"),
    "admin.timeout.ms": KeyDoc("flow", _UNUSED),
    "replication.policy.class": KeyDoc(
        "flow", "how remote topics are named: an Apache class name or a Python path"
    ),
    "replication.policy.separator": KeyDoc(
        "flow", "the text between the source alias and the topic in a remote topic's name"
    ),
    "replication.policy.internal.topic.separator.enabled": KeyDoc(
        "flow", "whether internal topics' names use the separator too"
    ),
    "forwarding.admin.class": KeyDoc("flow", _UNUSED),
    "metric.reporters": KeyDoc("flow", _UNUSED),
    "add.source.alias.to.metrics": KeyDoc("flow", _UNUSED),
    # MirrorSourceConnector
    "topics": KeyDoc("flow", "the source topics to copy (Java regexes, comma-separated)"),
    "topics.exclude": KeyDoc("flow", "source topics never copied, even when `topics` matches"),
    "topics.blacklist": KeyDoc("flow", "the old name of `topics.exclude`"),
    "config.properties.exclude": KeyDoc("flow", "topic configs never copied (Java regexes)"),
    "config.properties.blacklist": KeyDoc("flow", "the old name of `config.properties.exclude`"),
    "topic.filter.class": KeyDoc("flow", "the class that picks the topics to copy"),
    "config.property.filter.class": KeyDoc(
        "flow", "the class that picks the topic configs to copy"
    ),
    "use.defaults.from": KeyDoc(
        "flow", "whose defaults a topic config left at its default takes (`source` or `target`)"
    ),
    "consumer.poll.timeout.ms": KeyDoc("flow", _UNUSED),
    "refresh.topics.enabled": KeyDoc("flow", "whether new topics and partitions are looked for"),
    "refresh.topics.interval.seconds": KeyDoc(
        "flow", "how often the source is listed for new topics and partitions"
    ),
    "sync.topic.configs.enabled": KeyDoc("flow", "whether topic configs are copied"),
    "sync.topic.configs.interval.seconds": KeyDoc("flow", "how often topic configs are copied"),
    "sync.topic.acls.enabled": KeyDoc("flow", "whether topics' ACLs are copied"),
    "sync.topic.acls.interval.seconds": KeyDoc("flow", "how often topics' ACLs are copied"),
    "replication.factor": KeyDoc("flow", "replicas of each topic mm2 creates on the target"),
    "offset-syncs.topic.replication.factor": KeyDoc("flow", "replicas of the offset-syncs topic"),
    "offset.lag.max": KeyDoc(
        "flow", "how far a partition's copy runs ahead of its last offset sync before the next"
    ),
    "offset-syncs.topic.location": KeyDoc(
        "flow", "which cluster of the flow holds the offset-syncs topic"
    ),
    "emit.offset-syncs.enabled": KeyDoc(
        "flow", "whether offset syncs are written (checkpoints need them)"
    ),
    "heartbeats.replication.enabled": KeyDoc(
        "flow", "whether heartbeats topics are copied whatever `topics` says"
    ),
    "metric.names.formats": KeyDoc(
        "flow",
        "which names of Apache's MirrorMaker metrics /metrics serves: `legacy`, `new` "
        "(KIP-1280) or both; mm2's own names always",
    ),
    "use.incremental.alter.configs": KeyDoc("flow", _UNUSED),
    "task.assigned.partitions": KeyDoc("flow", _TASKS),
    "task.index": KeyDoc("flow", _TASKS),
    # MirrorCheckpointConnector
    "groups": KeyDoc("flow", "the consumer groups to checkpoint (Java regexes)"),
    "groups.exclude": KeyDoc("flow", "consumer groups never checkpointed"),
    "groups.blacklist": KeyDoc("flow", "the old name of `groups.exclude`"),
    "group.filter.class": KeyDoc("flow", "the class that picks the groups to checkpoint"),
    "group.mirroring.policy.class": KeyDoc(
        "flow", "the class that names a source group on the target"
    ),
    "refresh.groups.enabled": KeyDoc("flow", "whether new consumer groups are looked for"),
    "refresh.groups.interval.seconds": KeyDoc(
        "flow", "how often the source is listed for consumer groups"
    ),
    "emit.checkpoints.enabled": KeyDoc("flow", "whether checkpoints are written to the target"),
    "emit.checkpoints.interval.seconds": KeyDoc("flow", "how often checkpoints are written"),
    "sync.group.offsets.enabled": KeyDoc(
        "flow", "whether translated offsets are committed into target groups without members"
    ),
    "sync.group.offsets.interval.seconds": KeyDoc(
        "flow", "how often translated offsets are committed into target groups"
    ),
    "checkpoints.topic.replication.factor": KeyDoc("flow", "replicas of the checkpoints topic"),
    "task.assigned.groups": KeyDoc("flow", _TASKS),
    # MirrorHeartbeatConnector
    "emit.heartbeats.enabled": KeyDoc("flow", "whether heartbeats are written"),
    "emit.heartbeats.interval.seconds": KeyDoc("flow", "how often a heartbeat is written"),
    "heartbeats.topic.replication.factor": KeyDoc("flow", "replicas of the heartbeats topic"),
}
_OURS_FLOW: dict[str, KeyDoc] = {
    "sync.share.group.offsets.enabled": KeyDoc(
        "flow",
        "whether share groups' start offsets are set, translated, in target groups without members",
        ours=True,
    ),
    "sync.share.group.offsets.interval.seconds": KeyDoc(
        "flow", "how often share groups' start offsets are set on the target", ours=True
    ),
    "skip.oversized.records": KeyDoc(
        "flow", "skip (and count) records larger than the target takes, not fail", ours=True
    ),
    "progress.group.id": KeyDoc(
        "flow", "a source consumer group that follows the flow's positions (MM1's view)", ours=True
    ),
    "progress.group.commit.interval.ms": KeyDoc(
        "flow", "how often `progress.group.id`'s offsets are committed", ours=True
    ),
    "pipeline.trigger.interval.ms": KeyDoc(
        "flow", "accepted so older files load; unused since copy tasks stream", ours=True
    ),
    "pipeline.max.records.per.partition": KeyDoc(
        "flow", "accepted so older files load; unused since copy tasks stream", ours=True
    ),
    "schemas": KeyDoc("flow", "the source registry's subjects to copy (regexes)", ours=True),
    "schemas.exclude": KeyDoc("flow", "subjects never copied", ours=True),
    "sync.schemas.enabled": KeyDoc("flow", "whether subjects are copied", ours=True),
    "sync.schemas.interval.seconds": KeyDoc("flow", "how often subjects are copied", ours=True),
    "schema.ids.keys": KeyDoc("flow", "whether record keys' schema IDs are rewritten", ours=True),
    "schema.ids.values": KeyDoc(
        "flow", "whether record values' schema IDs are rewritten", ours=True
    ),
    "schema.ids.wait.ms": KeyDoc(
        "flow",
        "how long a partition held at a record whose schema ID is not mapped yet waits before a "
        "WARN names it (the partition stays held; the others go on)",
        ours=True,
    ),
    "key.subject.name.strategy": KeyDoc(
        "flow", "which subject describes a topic's keys (a strategy's class name)", ours=True
    ),
    "value.subject.name.strategy": KeyDoc(
        "flow", "which subject describes a topic's values (a strategy's class name)", ours=True
    ),
}
_WORKER: dict[str, KeyDoc] = {
    "exactly.once.source.support": KeyDoc(
        "worker",
        "`enabled`: records and positions in one transaction; `disabled`: at least once",
        apache="`disabled`",
    ),
    "offset.storage.topic": KeyDoc("worker", "the topic on the target that keeps source positions"),
    "offset.storage.partitions": KeyDoc(
        "worker", "partitions of the offsets topic (`offset.storage.topic`)"
    ),
    "offset.storage.replication.factor": KeyDoc(
        "worker",
        "replicas of the offsets topic; unset: 3, or the broker's default on fewer brokers",
        apache="`3`",
    ),
    "config.storage.topic": KeyDoc(
        "worker", "Connect's config topic; mm2 keeps its own (`mm2.configs.topic`) instead"
    ),
    "config.storage.replication.factor": KeyDoc(
        "worker", "replicas of `mm2.configs.topic` when mm2 creates it"
    ),
    "status.storage.topic": KeyDoc("worker", "Connect's status topic; mm2 keeps none"),
    "status.storage.partitions": KeyDoc("worker", "Connect's; mm2 keeps no status topic"),
    "status.storage.replication.factor": KeyDoc("worker", "Connect's; mm2 keeps no status topic"),
}

CATALOG: dict[str, KeyDoc] = {
    **_PROCESS,
    **_REST,
    **_CLUSTER,
    **_FLOW,
    **_OURS_FLOW,
    **_WORKER,
}
