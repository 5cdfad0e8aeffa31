"""MirrorMakerConfig's resolution rules: cluster props, herder pairs, connector base configs."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from mm2.config.names import CLIENT_CONFIG_NAMES, CONNECTOR_CLASSES, CONNECTOR_CONFIG_NAMES
from mm2.config.values import ValueProblem, parse_bool

__all__ = [
    "cluster_pairs",
    "cluster_props",
    "connector_base_config",
    "flow_key",
    "parse_clusters",
    "worker_config",
]

_CLIENT_PREFIX = re.compile(r"^(consumer|producer|admin)")
# The top-level keys MirrorMakerConfig.workerConfig takes for every herder's worker.
_WORKER_PREFIXES = (
    "offset.storage",
    "config.storage",
    "status.storage",
    "key.converter",
    "value.converter",
    "header.converter",
    "task",
    "worker",
    "replication.policy",
)
_BYTE_ARRAY_CONVERTER = "org.apache.kafka.connect.converters.ByteArrayConverter"


def parse_clusters(value: str) -> list[str]:
    """`clusters` as a LIST: comma-separated, trimmed, order kept, duplicates dropped."""
    seen: list[str] = []
    for alias in (a.strip() for a in value.split(",")):
        if alias and alias not in seen:
            seen.append(alias)
    return seen


def flow_key(source: str, target: str, key: str) -> str:
    return f"{source}->{target}.{key}"


def _with_prefix_stripped(raw: Mapping[str, str], prefix: str) -> dict[str, str]:
    return {k[len(prefix) :]: v for k, v in raw.items() if k.startswith(prefix)}


def cluster_props(raw: Mapping[str, str], cluster: str) -> dict[str, str]:
    """`c.<k>` stripped; client keys copied to producer./consumer./admin.; then top-level ones."""
    props = _with_prefix_stripped(raw, cluster + ".")
    for k in sorted(CLIENT_CONFIG_NAMES):
        if k in props:
            for role in ("producer", "consumer", "admin"):
                props.setdefault(f"{role}.{k}", props[k])
    for k in sorted(CLIENT_CONFIG_NAMES):
        if k in raw:
            for role in ("producer", "consumer", "admin"):
                props.setdefault(f"{role}.{k}", raw[k])
            props.setdefault(k, raw[k])
    return props


def _heartbeats(raw: Mapping[str, str], key: str, default: bool) -> bool:
    if key not in raw:
        return default
    try:
        return parse_bool(raw[key])
    except ValueProblem:
        return False  # Boolean.parseBoolean: anything but "true" is false


def cluster_pairs(raw: Mapping[str, str], clusters: Sequence[str]) -> list[tuple[str, str]]:
    """Ordered pairs that get a herder: `s->t.enabled`, or heartbeats on for that pair."""
    global_beats = _heartbeats(raw, "emit.heartbeats.enabled", True)
    pairs = []
    for source in clusters:
        for target in clusters:
            if source == target:
                continue
            enabled = _heartbeats(raw, flow_key(source, target, "enabled"), False)
            beats = _heartbeats(
                raw, flow_key(source, target, "emit.heartbeats.enabled"), global_beats
            )
            if enabled or beats:
                pairs.append((source, target))
    return pairs


def connector_base_config(
    raw: Mapping[str, str], source: str, target: str, connector: str
) -> dict[str, str]:
    """The string map Apache MM2 hands `connector` for herder source->target (untransformed)."""
    props = {k: v for k, v in raw.items() if k in CONNECTOR_CONFIG_NAMES}
    props.update({k: v for k, v in raw.items() if k.startswith("config.providers")})
    props.update({k: v for k, v in raw.items() if k.startswith("replication.policy")})
    # Ours: Spark settings for the data pipeline travel with the connector config.
    props.update({k: v for k, v in raw.items() if k.startswith("spark.")})
    for side, alias in (("source", source), ("target", target)):
        for k, v in cluster_props(raw, alias).items():
            if _CLIENT_PREFIX.match(k):
                props[f"{side}.{k}"] = v
            else:
                props[f"{side}.cluster.{k}"] = v
    props.setdefault("name", connector)
    props.setdefault("connector.class", CONNECTOR_CLASSES[connector])
    props.setdefault("source.cluster.alias", source)
    props.setdefault("target.cluster.alias", target)
    props.update(_with_prefix_stripped(raw, f"{source}->{target}."))
    props.setdefault("enabled", "false")
    return dict(sorted(props.items()))


def worker_config(raw: Mapping[str, str], source: str, target: str) -> dict[str, str]:
    """The Connect worker config Apache MM2 builds for herder source->target (untransformed):
    the target's cluster props, the top-level worker keys over them, then the defaults.

    Ours: a top-level `exactly.once.source.support`, which Apache's worker never sees (only
    `<target>.exactly.once.source.support` reaches it), is read as the worker's too."""
    props = cluster_props(raw, target)
    props.update({k: v for k, v in raw.items() if k.startswith(_WORKER_PREFIXES)})
    if "exactly.once.source.support" in raw:
        props["exactly.once.source.support"] = raw["exactly.once.source.support"]
    props.update({k: v for k, v in raw.items() if k.startswith("config.providers")})
    props.setdefault("client.id", f"{source}->{target}")
    props.setdefault("group.id", f"{source}-mm2")
    props.setdefault("offset.storage.topic", f"mm2-offsets.{source}.internal")
    props.setdefault("status.storage.topic", f"mm2-status.{source}.internal")
    props.setdefault("config.storage.topic", f"mm2-configs.{source}.internal")
    for converter in ("key.converter", "value.converter", "header.converter"):
        props.setdefault(converter, _BYTE_ARRAY_CONVERTER)
    return dict(sorted(props.items()))
