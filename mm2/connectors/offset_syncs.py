"""Where a flow's offset syncs go, made ready for the copy tasks (which emit them), and the
positions they prove when the offsets topic was lost."""

from __future__ import annotations

from collections.abc import Mapping

from mm2.client.syncs import read_syncs, syncs_location
from mm2.config.model import SOURCE, Flow
from mm2.copy.rebuild import Anchor, Proof, prove_positions
from mm2.copy.routes import Route
from mm2.records import TP, OffsetSync

__all__ = ["offset_syncs_target", "positions_from_syncs"]


def offset_syncs_target(flow: Flow) -> tuple[str, dict[str, str] | None]:
    """(topic, producer config) for the flow's offset syncs, the topic created if missing;
    the config is None when emit.offset-syncs.enabled is false."""
    location = syncs_location(flow)
    settings = flow.settings.source
    if not settings.emit_offset_syncs_enabled:
        return location.topic, None
    location.create_topic(settings.offset_syncs_topic_replication_factor)
    return location.topic, dict(location.producer_config)


def positions_from_syncs(
    flow: Flow,
    routes: Mapping[str, Route],
    source_consumer: Mapping[str, str],
    *,
    schema_ids: bool = False,
) -> Proof:
    """What the offset syncs and the remote topics prove of each routed partition
    (mm2.copy.rebuild). Raises Unreachable when a cluster does not answer."""
    latest: dict[TP, OffsetSync] = {}
    for sync, _ in read_syncs(syncs_location(flow), timeout=30.0) or []:
        latest[(sync.topic, sync.partition)] = sync
    anchors = [
        Anchor((t, p), (routes[t].target_topic, p), s.upstream_offset, s.downstream_offset)
        for (t, p), s in sorted(latest.items())
        if t in routes and p < routes[t].partitions
    ]
    target = flow.target_consumer_config(SOURCE, "positions-rebuild-consumer")
    copied: set[TP] = set()
    whole: set[TP] = set()
    proven = prove_positions(
        anchors, source_consumer, target, copied=copied, whole=whole, schema_ids=schema_ids
    )
    synced = {a.source: a.upstream for a in anchors if a.source in copied}
    return Proof(synced, proven, frozenset(whole))
