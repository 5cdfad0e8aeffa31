"""Positions proven from what the target holds, for a flow whose offsets topic was lost.

Each offset sync (upstream u, downstream d) says that the source record at u was copied to the
remote record at d. The records the remote partition holds after d were copied from the source
records after u, in order, one for one: a walk over both logs from the sync on, record beside
record, proves how far the copy went. A pair that differs (key, value, or a CreateTime
timestamp) ends the walk, and so does a sync whose own two records differ (a topic deleted and
re-created since) or cannot be read: what was not proven is copied again (duplicates), never
skipped.

Records are read with each side's own isolation level (read_committed on the target: aborted
copies are no copies). A walk reads as many source records as the target holds after its sync,
which is what the copy tasks committed since their last sync (a transaction's worth, or Apache
MM2's `offset.lag.max`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from confluent_kafka import TIMESTAMP_CREATE_TIME, Consumer, KafkaError, Message, TopicPartition

from mm2.kafka.take import take
from mm2.records import TP

__all__ = ["Anchor", "Proof", "prove_positions"]

_BATCH = 10_000


@dataclass(frozen=True)
class Anchor:
    """A source partition, its remote partition, and its latest offset sync."""

    source: TP
    remote: TP
    upstream: int
    downstream: int


@dataclass(frozen=True)
class Proof:
    """What the offset syncs and the remote topics prove, per source partition with a sync."""

    # The upstream offset of the latest sync whose copy is on the target, committed: a record
    # known to be copied, every one before it too.
    synced: dict[TP, int]
    # The last source offset proven copied: its copy and those of every record since the sync
    # are on the target, committed.
    proven: dict[TP, int]
    # Partitions whose remote partition holds nothing committed after the copy of `proven`: every
    # record after the sync was paired, to the end. Their later records were not copied.
    whole: frozenset[TP] = frozenset()


@dataclass(frozen=True)
class _Seen:
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: tuple[int, int]


def _same_data(copy: bytes | None, original: bytes | None, framed: bool) -> bool:
    """Equal, or with `framed` (the flow rewrites schema IDs) equal but for the 4-byte schema
    ID of Confluent's payload prefix, which the copy may carry in the target's numbering."""
    if copy == original:
        return True
    return (
        framed
        and copy is not None
        and original is not None
        and len(copy) == len(original)
        and len(copy) > 4
        and copy[0] == original[0] == 0
        and copy[5:] == original[5:]
    )


def _same(target: _Seen, source: _Seen, framed: bool = False) -> bool:
    if not _same_data(target.key, source.key, framed) or not _same_data(
        target.value, source.value, framed
    ):
        return False
    # A remote topic with LogAppendTime stamps its own times: only CreateTime is compared.
    return target.timestamp[0] != TIMESTAMP_CREATE_TIME or target.timestamp == source.timestamp


def _read(
    config: Mapping[str, str],
    starts: Mapping[TP, int],
    wanted: Mapping[TP, int],
    deadline: float,
    ends: set[TP] | None = None,
) -> dict[TP, list[_Seen]]:
    """Up to `wanted[tp]` records of each partition from `starts[tp]` on, or to its end (what
    the read finds before the deadline: a shorter list proves less, never more). `ends` is
    given the partitions read to their end."""
    out: dict[TP, list[_Seen]] = {tp: [] for tp in starts}
    if not starts:
        return out
    consumer = Consumer(
        {
            "group.id": "mm2-positions-rebuild",
            **config,
            "auto.offset.reset": "error",  # a start gone from the log proves nothing
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    open_ = set(starts)
    try:
        consumer.assign([TopicPartition(t, p, off) for (t, p), off in sorted(starts.items())])
        while open_ and time.monotonic() < deadline:
            for msg in take(consumer, _BATCH, 0.5):
                tp = (msg.topic() or "", msg.partition() or 0)
                if tp not in open_:
                    continue
                err = msg.error()
                if err is not None:
                    if err.code() != KafkaError._PARTITION_EOF:
                        out[tp] = []  # out of range or unreadable: nothing proven here
                    elif ends is not None:
                        ends.add(tp)
                    _close(consumer, open_, tp)
                    continue
                out[tp].append(_record(msg))
                if len(out[tp]) >= wanted[tp]:
                    _close(consumer, open_, tp)
    finally:
        consumer.close()
    return out


def _record(msg: Message) -> _Seen:
    kind, ts = msg.timestamp()
    return _Seen(msg.offset() or 0, msg.key(), msg.value(), (kind, ts))


def _close(consumer: Consumer, open_: set[TP], tp: TP) -> None:
    open_.discard(tp)
    consumer.pause([TopicPartition(tp[0], tp[1])])


def prove_positions(
    anchors: Sequence[Anchor],
    source_consumer: Mapping[str, str],
    target_consumer: Mapping[str, str],
    *,
    timeout: float = 60.0,
    limit: int = 1_000_000,
    copied: set[TP] | None = None,
    whole: set[TP] | None = None,
    schema_ids: bool = False,
) -> dict[TP, int]:
    """The last source offset proven copied of each anchor's partition (its Connect position);
    partitions with nothing proven are left out. At most `limit` records a partition. `copied`
    is given the source partitions whose sync's own copy is on the target, read committed
    (their sync's upstream record was copied, proven or not); `whole` those whose every
    committed record after the sync, to the remote partition's end, was paired (nothing after
    the proven one was copied). `schema_ids`: the flow rewrites schema IDs, so a pair may
    differ in the 4 ID bytes of a payload prefix."""
    deadline = time.monotonic() + timeout
    by_remote = {a.remote: a for a in anchors}
    remote_ends: set[TP] = set()
    copies = _read(
        {**target_consumer, "isolation.level": "read_committed"},
        {a.remote: a.downstream for a in anchors},
        {a.remote: limit for a in anchors},
        deadline,
        remote_ends,
    )
    # Only anchors whose sync's own record is still on the target can be walked.
    walkable = {
        by_remote[r].source: seen
        for r, seen in copies.items()
        if seen and seen[0].offset == by_remote[r].downstream
    }
    if copied is not None:
        copied.update(walkable)
    by_source = {a.source: a for a in anchors}
    originals = _read(
        source_consumer,
        {tp: by_source[tp].upstream for tp in walkable},
        {tp: len(seen) for tp, seen in walkable.items()},
        deadline,
    )
    proven: dict[TP, int] = {}
    for tp, seen in walkable.items():
        position = None
        read = originals[tp]
        if not read or read[0].offset != by_source[tp].upstream:
            continue  # the sync's source record is gone (retention, compaction)
        paired = 0
        for copy, original in zip(seen, read, strict=False):
            if not _same(copy, original, schema_ids):
                break
            position = original.offset
            paired += 1
        if position is not None:
            proven[tp] = position
            if whole is not None and paired == len(seen) and by_source[tp].remote in remote_ends:
                whole.add(tp)
    return proven
