"""What a cluster's topic names say about the replication topology (Apache's MirrorClient rules).

Pure functions of a ReplicationPolicy and a list of topic names, so they are tested without a
broker; MirrorClient feeds them the names a cluster lists.
"""

from __future__ import annotations

from collections.abc import Iterable

from mm2.policies.replication import ReplicationPolicy

__all__ = [
    "checkpoint_topics",
    "count_hops",
    "heartbeat_topics",
    "remote_topics",
    "replication_hops",
    "sources_of",
    "upstream_clusters",
]


def count_hops(policy: ReplicationPolicy, topic: str, upstream_alias: str) -> int:
    """Hops from `upstream_alias` to here along `topic`'s name; -1 when it did not come from it.

    `primary.orders` is 1 hop from primary, `b.a.orders` 2 hops from a. A source seen twice
    (a policy such as Identity that cannot name cycles) ends the walk with -1.
    """
    hops = 0
    visited: set[str] = set()
    current: str | None = topic
    while current is not None:
        hops += 1
        source = policy.topic_source(current)
        if source is None:
            return -1
        if source == upstream_alias:
            return hops
        if source in visited:
            return -1
        visited.add(source)
        current = policy.upstream_topic(current)
    return -1


def heartbeat_topics(policy: ReplicationPolicy, topics: Iterable[str]) -> set[str]:
    """`heartbeats` and its replicas (`a.heartbeats`, `b.a.heartbeats`), not `a-heartbeats`."""
    return {t for t in topics if policy.is_heartbeats_topic(t)}


def checkpoint_topics(policy: ReplicationPolicy, topics: Iterable[str]) -> set[str]:
    """`<alias>.checkpoints.internal` topics; `checkpoints.internal` alone is not one."""
    return {t for t in topics if policy.is_checkpoints_topic(t)}


def replication_hops(policy: ReplicationPolicy, topics: Iterable[str], upstream_alias: str) -> int:
    """The fewest hops from `upstream_alias` over every heartbeats topic; -1 if none leads there."""
    found = [count_hops(policy, t, upstream_alias) for t in heartbeat_topics(policy, topics)]
    reachable = [h for h in found if h != -1]
    return min(reachable) if reachable else -1


def sources_of(policy: ReplicationPolicy, topic: str) -> set[str]:
    """Every cluster along `topic`'s upstream chain (`b.a.heartbeats` -> {b, a})."""
    sources: set[str] = set()
    current: str | None = topic
    source = policy.topic_source(topic)
    while source is not None and source not in sources and current is not None:
        sources.add(source)
        current = policy.upstream_topic(current)
        source = None if current is None else policy.topic_source(current)
    return sources


def upstream_clusters(policy: ReplicationPolicy, topics: Iterable[str]) -> set[str]:
    """Every cluster that replicates here directly or indirectly, from the heartbeats topics."""
    out: set[str] = set()
    for t in heartbeat_topics(policy, topics):
        out |= sources_of(policy, t)
    return out


def remote_topics(
    policy: ReplicationPolicy, topics: Iterable[str], source: str | None = None
) -> set[str]:
    """Replicated topics (not internal, with a source), optionally only those from `source`."""
    out = set()
    for t in topics:
        if policy.is_internal_topic(t):
            continue
        topic_source = policy.topic_source(t)
        if topic_source is not None and (source is None or topic_source == source):
            out.add(t)
    return out
