"""Where a flow's offset syncs go, made ready for the copy tasks (which emit them), and the
positions they prove: at every settle (from the syncs topic's tail) and when the offsets topic
was lost (from all of it)."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping

from mm2.client.syncs import recent_syncs, syncs_location
from mm2.config.model import SOURCE, Flow
from mm2.copy.fencing import held_back
from mm2.copy.rebuild import Anchor, Proof, prove_positions
from mm2.copy.routes import Route
from mm2.kafka.offsets import OffsetLister
from mm2.records import TP

__all__ = ["offset_syncs_target", "positions_from_syncs"]

log = logging.getLogger(__name__)


def offset_syncs_target(flow: Flow) -> tuple[str, dict[str, str] | None]:
    """(topic, producer config) for the flow's offset syncs, the topic created if missing;
    the config is None when emit.offset-syncs.enabled is false."""
    location = syncs_location(flow)
    settings = flow.settings.source
    if not settings.emit_offset_syncs_enabled:
        return location.topic, None
    location.create_topic(settings.offset_syncs_topic_replication_factor)
    return location.topic, dict(location.producer_config)


# Earlier syncs tried where the latest one's copy is not on the target committed: a broker's
# stop can drop a committed transaction's marker on a remote partition, and the fencing then
# aborts the records that sync points at (docs/architecture.md, "Transactions left open").
_EARLIER_SYNCS = 3
# A settle's proof reads the syncs topic's last records only, at least this many and this many
# per routed partition: a busy flow's syncs topic holds millions until compaction, and reading
# them all at every settle took seconds (12 s for a million) or failed its deadline. A cut
# transaction is as recent as the broker's stop before the settle; a partition whose syncs
# are older keeps its position, as without the proof.
_TAIL_SYNCS = 50_000
_TAIL_SYNCS_PER_PARTITION = 50


def positions_from_syncs(
    flow: Flow,
    routes: Mapping[str, Route],
    source_consumer: Mapping[str, str],
    *,
    schema_ids: bool = False,
    whole_log: bool = False,
) -> Proof:
    """What the offset syncs and the remote topics prove of each routed partition
    (mm2.copy.rebuild), walked from its latest offset sync whose copy is on the target, of the
    last few. The syncs are read from the topic's tail, or from all of it with `whole_log`
    (a lost offsets topic's rebuild). Raises Unreachable when a cluster does not answer."""
    began = time.monotonic()
    partitions = sum(r.partitions for r in routes.values())
    tail = max(_TAIL_SYNCS, _TAIL_SYNCS_PER_PARTITION * partitions)
    recent = recent_syncs(
        syncs_location(flow),
        _EARLIER_SYNCS + 1,
        last=None if whole_log else tail,
        timeout=30.0,  # without a record for that long: the cluster stopped answering
    )
    todo = {
        tp: kept
        for tp, kept in (recent or {}).items()
        if tp[0] in routes and tp[1] < routes[tp[0]].partitions
    }
    target = flow.target_consumer_config(SOURCE, "positions-rebuild-consumer")
    synced: dict[TP, int] = {}
    proven: dict[TP, int] = {}
    whole: set[TP] = set()
    read = time.monotonic()
    rounds = 0
    while todo:
        rounds += 1
        anchors = [
            Anchor(
                (t, p),
                (routes[t].target_topic, p),
                kept[-1].upstream_offset,
                kept[-1].downstream_offset,
            )
            for (t, p), kept in sorted(todo.items())
        ]
        copied: set[TP] = set()
        proven.update(
            prove_positions(
                anchors, source_consumer, target, copied=copied, whole=whole, schema_ids=schema_ids
            )
        )
        synced.update({a.source: a.upstream for a in anchors if a.source in copied})
        todo = {tp: kept[:-1] for tp, kept in todo.items() if tp not in copied and len(kept) > 1}
    walked = time.monotonic()
    if whole:  # a walk read to a last stable offset held back by a transaction saw less
        remotes = {(routes[t].target_topic, p): (t, p) for t, p in whole}
        lister = OffsetLister(flow.target_admin_config(SOURCE, "positions-rebuild-admin"))
        whole -= {remotes[tp] for tp in held_back(lister, sorted(remotes))}
    log.debug(
        "%s: proof: offset syncs read in %.2f s, %d partition(s) walked in %.2f s (%d round(s)),"
        " held back checked in %.2f s",
        flow.name,
        read - began,
        len(proven),
        walked - read,
        rounds,
        time.monotonic() - walked,
    )
    return Proof(synced, proven, frozenset(whole))
