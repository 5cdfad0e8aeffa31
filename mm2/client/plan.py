"""A consumer-group move between clusters, planned per partition, and what applying it commits.

Pure: the Kafka reads happen in mm2.client.failover, which hands the group's commits and the
translators built from the offset syncs to `plan_partitions`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from mm2.errors import ConflictError
from mm2.offset_syncs.checkpoint_rules import rename_topic_partition
from mm2.offset_syncs.reverse import ReverseTranslator
from mm2.offset_syncs.translator import FirstRecord, OffsetTranslator
from mm2.policies.replication import ReplicationPolicy
from mm2.records import Checkpoint, OffsetAndMetadata, TopicPartition

__all__ = [
    "FailoverError",
    "FailoverPlan",
    "PartitionMove",
    "commits_for",
    "moves_from_checkpoints",
    "plan_partitions",
]


class FailoverError(ConflictError):
    """A failover or failback that cannot (or must not) be done now, nothing committed (the
    group has no commits, members on the target, nothing translates); the message says why.
    A conflict with the clusters' state: 409 over REST."""


@dataclass(frozen=True)
class PartitionMove:
    """One partition of the group: where it is committed now and where it resumes.

    `target_offset` is None when the partition cannot be translated (`note` says why); it is
    then left alone. `rereads_at_most` is None when unknown (a checkpoint carries no bound).
    """

    source: TopicPartition
    source_offset: int
    target: TopicPartition | None
    target_offset: int | None
    exact: bool = False
    rereads_at_most: int | None = None
    note: str = ""
    metadata: str = ""
    current_target_offset: int | None = None

    @property
    def translated(self) -> bool:
        return self.target is not None and self.target_offset is not None

    def to_json(self) -> dict[str, object]:
        return {
            "source_topic": self.source.topic,
            "source_partition": self.source.partition,
            "source_offset": self.source_offset,
            "target_topic": None if self.target is None else self.target.topic,
            "target_partition": None if self.target is None else self.target.partition,
            "target_offset": self.target_offset,
            "exact": self.exact,
            "rereads_at_most": self.rereads_at_most,
            "current_target_offset": self.current_target_offset,
            "note": self.note,
        }


@dataclass(frozen=True)
class FailoverPlan:
    """Moving `group` from cluster `source` to cluster `target`, partition by partition."""

    kind: str  # "failover" or "failback"
    group: str
    source: str
    target: str
    basis: str  # "offset syncs" or "checkpoints"
    moves: tuple[PartitionMove, ...]
    notes: tuple[str, ...] = field(default=())
    # The group's name on the target (group.mirroring.policy.class); "" for the same name.
    target_group: str = ""

    @property
    def committed_as(self) -> str:
        """The group on the target that the plan commits to."""
        return self.target_group or self.group

    @property
    def translated(self) -> list[PartitionMove]:
        return [m for m in self.moves if m.translated]

    @property
    def untranslated(self) -> list[PartitionMove]:
        return [m for m in self.moves if not m.translated]

    @property
    def exact(self) -> bool:
        """Every partition translated exactly (and at least one translated)."""
        return bool(self.translated) and all(m.exact for m in self.translated)

    @property
    def rereads_at_most(self) -> int | None:
        """Records the group may read twice over all partitions; None when unknown."""
        bounds = [m.rereads_at_most for m in self.translated]
        return None if any(b is None for b in bounds) else sum(b or 0 for b in bounds)

    def to_json(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "group": self.group,
            "target_group": self.committed_as,
            "source": self.source,
            "target": self.target,
            "basis": self.basis,
            "notes": list(self.notes),
            "rereads_at_most": self.rereads_at_most,
            "partitions": [m.to_json() for m in self.moves],
        }


def plan_partitions(
    commits: Mapping[TopicPartition, OffsetAndMetadata],
    *,
    policy: ReplicationPolicy,
    source: str,
    target: str,
    mirrored: Callable[[str], bool],
    forward: OffsetTranslator | None,
    backward: ReverseTranslator | None,
    current: Mapping[TopicPartition, OffsetAndMetadata],
    first_record: FirstRecord | None = None,
) -> list[PartitionMove]:
    """Translate the group's commits on `source` into positions on `target`.

    Topics that came from `target` (`target.orders`) go home to their upstream topic through
    `backward`, the reverse of the target->source syncs; topics `mirrored` by source->target
    go forward through `forward`, which asks `first_record` (the source read from the commit)
    about commits older than every sync kept. Anything else is listed with the reason and left
    alone.
    """
    moves = []
    for tp, om in sorted(commits.items()):
        if policy.topic_source(tp.topic) == target:
            move = _home(tp, om, policy, source, target, backward)
        elif policy.is_internal_topic(tp.topic) or not mirrored(tp.topic):
            move = PartitionMove(
                tp, om.offset, None, None, note=f"not mirrored by {source}->{target}"
            )
        else:
            move = _forward(tp, om, policy, source, target, forward, first_record)
        if move.target is not None:
            now = current.get(move.target)
            move = _with_current(move, None if now is None else now.offset)
        moves.append(move)
    return moves


def _with_current(move: PartitionMove, offset: int | None) -> PartitionMove:
    return PartitionMove(
        move.source,
        move.source_offset,
        move.target,
        move.target_offset,
        move.exact,
        move.rereads_at_most,
        move.note,
        move.metadata,
        offset,
    )


def _forward(
    tp: TopicPartition,
    om: OffsetAndMetadata,
    policy: ReplicationPolicy,
    source: str,
    target: str,
    forward: OffsetTranslator | None,
    first_record: FirstRecord | None,
) -> PartitionMove:
    renamed = rename_topic_partition(policy, source, target, tp)
    flow = f"{source}->{target}"
    if forward is None:
        return PartitionMove(tp, om.offset, renamed, None, note=f"no offset syncs topic for {flow}")
    tr = forward.translate(tp, om.offset, first_record)
    if tr is None:
        note = f"no offset sync yet: {flow} has not mirrored this partition"
        return PartitionMove(tp, om.offset, renamed, None, note=note)
    if tr.downstream < 0:
        note = "older than every offset sync kept: cannot translate without guessing"
        return PartitionMove(tp, om.offset, renamed, None, note=note)
    note = "exact" if tr.exact else f"after the nearest sync below {om.offset}"
    if tr.via is not None:
        note = (
            f"{note}: as {tr.via}, the first record {source} holds at or after {om.offset}"
            if tr.exact
            else f"as {tr.via}, the first record {source} holds at or after {om.offset}, "
            f"after the nearest sync below it"
        )
    return PartitionMove(
        tp, om.offset, renamed, tr.downstream, tr.exact, tr.rereads_at_most, note, om.metadata
    )


def _home(
    tp: TopicPartition,
    om: OffsetAndMetadata,
    policy: ReplicationPolicy,
    source: str,
    target: str,
    backward: ReverseTranslator | None,
) -> PartitionMove:
    upstream = policy.upstream_topic(tp.topic)
    home = TopicPartition(upstream if upstream is not None else tp.topic, tp.partition)
    flow = f"{target}->{source}"
    if backward is None:
        note = f"came from {target}, but there is no offset syncs topic of {flow}"
        return PartitionMove(tp, om.offset, home, None, note=note)
    tr = backward.translate(home, om.offset)
    if tr is None:
        note = f"came from {target}: no offset sync at or below {om.offset} to go back with"
        return PartitionMove(tp, om.offset, home, None, note=note)
    note = "exact (back home)" if tr.exact else "back home, after the nearest sync below"
    return PartitionMove(
        tp, om.offset, home, tr.upstream, tr.exact, tr.rereads_at_most, note, om.metadata
    )


def moves_from_checkpoints(
    checkpoints: Mapping[TopicPartition, Checkpoint],
    *,
    policy: ReplicationPolicy,
    source: str,
    target: str,
    current: Mapping[TopicPartition, OffsetAndMetadata],
) -> list[PartitionMove]:
    """The plan as the target's latest checkpoints have it (the source being unreachable)."""
    moves = []
    for tp, cp in sorted(checkpoints.items()):
        if policy.topic_source(tp.topic) == source:
            upstream = policy.upstream_topic(tp.topic) or tp.topic
        else:  # a topic that went home: upstream it was the remote copy
            upstream = policy.format_remote_topic(target, tp.topic)
        now = current.get(tp)
        moves.append(
            PartitionMove(
                TopicPartition(upstream, tp.partition),
                cp.upstream_offset,
                tp,
                cp.downstream_offset,
                False,
                None,
                "from the latest checkpoint",
                cp.metadata,
                None if now is None else now.offset,
            )
        )
    return moves


def commits_for(
    plan: FailoverPlan, current: Mapping[TopicPartition, OffsetAndMetadata], *, force: bool
) -> tuple[dict[TopicPartition, OffsetAndMetadata], dict[TopicPartition, tuple[int, int]]]:
    """What to commit on the target, and what is kept because it is ahead (current, planned).

    A target commit never moves backwards unless `force`: the group already read further there.
    """
    commit: dict[TopicPartition, OffsetAndMetadata] = {}
    kept: dict[TopicPartition, tuple[int, int]] = {}
    for move in plan.translated:
        if move.target is None or move.target_offset is None:
            continue
        now = current.get(move.target)
        if now is not None and now.offset > move.target_offset and not force:
            kept[move.target] = (now.offset, move.target_offset)
            continue
        if now is not None and now.offset == move.target_offset:
            continue
        commit[move.target] = OffsetAndMetadata(move.target_offset, move.metadata)
    return commit, kept
