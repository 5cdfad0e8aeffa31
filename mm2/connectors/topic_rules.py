"""MirrorSourceConnector's pure decisions: which topics, which new topics and partitions,
which config operations and which ACL bindings (Apache's rules, no I/O)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace

from mm2.copy.routes import Route
from mm2.kafka.acls import AclBinding
from mm2.kafka.topics import ConfigOp, TopicConfigEntry
from mm2.policies.filter import ConfigPropertyFilter, should_replicate_topic

__all__ = [
    "TopicPlan",
    "acl_bindings_to_sync",
    "config_ops",
    "new_topic_configs",
    "plan_topics",
    "should_replicate_acl",
    "should_replicate_topic",
    "target_acl_binding",
    "target_config",
]


@dataclass(frozen=True)
class TopicPlan:
    """What one refresh does: topics to create, partitions to add, and the routes ready now.

    `create` maps source topic -> partitions; `increase` maps remote topic -> new count.
    """

    create: Mapping[str, int] = field(default_factory=dict)
    increase: Mapping[str, int] = field(default_factory=dict)
    routes: Mapping[str, Route] = field(default_factory=dict)


def plan_topics(
    source: Mapping[str, int], target: Mapping[str, int], remote: Callable[[str], str]
) -> TopicPlan:
    """computeAndCreateTopicPartitions over (already filtered) source and target counts.

    A remote topic that is missing is created with the source's count; one with fewer partitions
    grows to it (never shrinks). A route is ready once its remote exists; it carries the
    partitions both sides have, so the pipeline never writes to a partition not yet there.
    Remote topics that exist on the target first (TopicOnTargetFirst) are simply used.
    """
    create: dict[str, int] = {}
    increase: dict[str, int] = {}
    routes: dict[str, Route] = {}
    for topic, partitions in sorted(source.items()):
        name = remote(topic)
        have = target.get(name)
        if have is None:
            create[topic] = partitions
            continue
        if partitions > have:
            increase[name] = partitions
        routes[topic] = Route(topic, name, min(partitions, have))
    return TopicPlan(create, increase, routes)


def target_config(
    entries: Iterable[TopicConfigEntry], config_filter: ConfigPropertyFilter, *, incremental: bool
) -> list[TopicConfigEntry]:
    """Apache's targetConfig: the source entries worth carrying to the target.

    Read-only, sensitive and STATIC_BROKER_CONFIG entries and the ones the filter rejects are
    dropped. Defaults are kept for the incremental path (they become DELETE or SET ops) and,
    otherwise, only when the filter says to take defaults from the source.
    """
    return [
        e
        for e in entries
        if (
            incremental or not e.is_default or config_filter.should_replicate_source_default(e.name)
        )
        and not e.is_read_only
        and not e.is_sensitive
        and e.source != "STATIC_BROKER_CONFIG"
        and config_filter.should_replicate_config_property(e.name)
    ]


def new_topic_configs(
    entries: Iterable[TopicConfigEntry], config_filter: ConfigPropertyFilter
) -> dict[str, str]:
    """The configs a new remote topic is created with (Apache's configToMap of targetConfig)."""
    return {
        e.name: e.value
        for e in target_config(entries, config_filter, incremental=False)
        if e.value is not None
    }


def config_ops(
    entries: Iterable[TopicConfigEntry], config_filter: ConfigPropertyFilter
) -> tuple[ConfigOp, ...]:
    """syncTopicConfigs' IncrementalAlterConfigs ops, sorted by name (comparable across syncs).

    A source default becomes DELETE (the target keeps its own default) unless defaults come
    from the source; everything else is SET to the source's value.
    """
    ops: list[ConfigOp] = []
    for e in target_config(entries, config_filter, incremental=True):
        if e.is_default and not config_filter.should_replicate_source_default(e.name):
            ops.append(ConfigOp(e.name, "DELETE"))
        elif e.value is not None:
            ops.append(ConfigOp(e.name, "SET", e.value))
    return tuple(sorted(ops, key=lambda o: o.name))


def should_replicate_acl(binding: AclBinding) -> bool:
    """Apache's shouldReplicateAcl: ALLOW WRITE stays with the source (only MM2 writes)."""
    return not (binding.permission == "ALLOW" and binding.operation == "WRITE")


def target_acl_binding(binding: AclBinding, remote_topic: str) -> AclBinding:
    """Apache's targetAclBinding: a literal ACL on the remote topic; ALLOW ALL becomes READ."""
    operation = binding.operation
    if binding.permission == "ALLOW" and operation == "ALL":
        operation = "READ"
    return replace(
        binding,
        resource_type="TOPIC",
        name=remote_topic,
        pattern_type="LITERAL",
        operation=operation,
    )


def acl_bindings_to_sync(
    bindings: Iterable[AclBinding],
    should_replicate: Callable[[str], bool],
    remote: Callable[[str], str],
) -> list[AclBinding]:
    """syncTopicAcls: literal topic ACLs of replicated topics, transformed for the target."""
    return [
        target_acl_binding(b, remote(b.name))
        for b in bindings
        if b.resource_type == "TOPIC"
        and b.pattern_type == "LITERAL"
        and should_replicate_acl(b)
        and should_replicate(b.name)
    ]
