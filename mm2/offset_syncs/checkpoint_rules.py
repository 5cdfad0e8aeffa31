"""Pure decisions of MirrorCheckpointTask: topic renaming, which checkpoints to emit, group sync."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol

from mm2.records import Checkpoint, OffsetAndMetadata, TopicPartition

__all__ = [
    "ReplicationPolicyLike",
    "Translate",
    "checkpoint_for",
    "checkpoint_is_more_recent",
    "checkpoints_for_group",
    "group_offsets_to_sync",
    "rename_topic_partition",
    "sync_group_offsets",
]

# (upstream partition, upstream offset) -> downstream offset, -1 (too old) or None (unknown);
# OffsetSyncStore.translate_downstream has this shape.
Translate = Callable[[TopicPartition, int], int | None]


class ReplicationPolicyLike(Protocol):
    """The three ReplicationPolicy methods checkpoint renaming needs."""

    def format_remote_topic(self, source_cluster_alias: str, topic: str) -> str: ...

    def topic_source(self, topic: str) -> str | None: ...

    def original_topic(self, topic: str) -> str: ...


def rename_topic_partition(
    policy: ReplicationPolicyLike,
    source_cluster_alias: str,
    target_cluster_alias: str,
    upstream: TopicPartition,
) -> TopicPartition:
    """The downstream name of an upstream partition, as checkpoints carry it.

    A topic that came from the target goes home under its original name (`target2.topic3` ->
    `topic3`); any other topic gets the remote name (`topic3` -> `source1.topic3`).
    """
    if policy.topic_source(upstream.topic) == target_cluster_alias:
        return TopicPartition(policy.original_topic(upstream.topic), upstream.partition)
    return TopicPartition(
        policy.format_remote_topic(source_cluster_alias, upstream.topic), upstream.partition
    )


def checkpoint_is_more_recent(candidate: Checkpoint, previous: Checkpoint | None) -> bool:
    """Emit when there is no previous checkpoint, after an upstream rewind, or when downstream grew.

    Equal or smaller downstream offsets are suppressed, which keeps checkpoints monotonic.
    """
    if previous is None:
        return True
    if candidate.upstream_offset < previous.upstream_offset:
        return True
    return candidate.downstream_offset > previous.downstream_offset


def checkpoint_for(
    group: str,
    upstream: TopicPartition,
    committed: OffsetAndMetadata | None,
    translate: Translate,
    rename: Callable[[TopicPartition], TopicPartition],
) -> Checkpoint | None:
    """The checkpoint for one committed upstream offset, or None when it cannot be translated.

    The downstream offset may be -1 (too old); `checkpoints_for_group` drops those.
    """
    if committed is None:
        return None
    downstream = translate(upstream, committed.offset)
    if downstream is None:
        return None
    renamed = rename(upstream)
    return Checkpoint(
        group,
        renamed.topic,
        renamed.partition,
        committed.offset,
        downstream,
        committed.metadata,
    )


def checkpoints_for_group(
    group: str,
    upstream_offsets: Mapping[TopicPartition, OffsetAndMetadata | None],
    *,
    translate: Translate,
    rename: Callable[[TopicPartition], TopicPartition],
    previous: Mapping[TopicPartition, Checkpoint],
    topic_filter: Callable[[str], bool],
) -> list[Checkpoint]:
    """The checkpoints to emit for a group's committed source offsets, in the mapping's order.

    `previous` holds the group's last checkpoints keyed by downstream partition; the caller
    stores the returned checkpoints there once they are emitted.
    """
    result: list[Checkpoint] = []
    for upstream, committed in upstream_offsets.items():
        if not topic_filter(upstream.topic):
            continue
        checkpoint = checkpoint_for(group, upstream, committed, translate, rename)
        if checkpoint is None or checkpoint.downstream_offset < 0:
            continue
        if checkpoint_is_more_recent(checkpoint, previous.get(checkpoint.topic_partition)):
            result.append(checkpoint)
    return result


def group_offsets_to_sync(
    desired: Mapping[TopicPartition, OffsetAndMetadata],
    target: Mapping[TopicPartition, OffsetAndMetadata | None] | None,
) -> dict[TopicPartition, OffsetAndMetadata]:
    """What sync.group.offsets writes to one target group.

    `target` is the group's committed offsets if it is EMPTY (idle) on the target, None
    otherwise (dead, unknown or active: everything is written, and the broker rejects
    writes to an active group). A partition is written when the target has no offset, a null
    offset, or a lower one: a target group never moves backwards.
    """
    if target is None:
        return dict(desired)
    result: dict[TopicPartition, OffsetAndMetadata] = {}
    for tp, converted in desired.items():
        current = target.get(tp)
        if current is None or current.offset < converted.offset:
            result[tp] = converted
    return result


def sync_group_offsets(
    checkpoints: Mapping[str, Mapping[TopicPartition, Checkpoint]],
    idle_target_offsets: Mapping[str, Mapping[TopicPartition, OffsetAndMetadata | None]],
) -> dict[str, dict[TopicPartition, OffsetAndMetadata]]:
    """Per group, the offsets to write on the target; groups with nothing to write are left out.

    `checkpoints` is the latest checkpoint per group and downstream partition;
    `idle_target_offsets` the committed offsets of the target groups found EMPTY.
    """
    result: dict[str, dict[TopicPartition, OffsetAndMetadata]] = {}
    for group, per_partition in checkpoints.items():
        desired = {tp: cp.offset_and_metadata() for tp, cp in per_partition.items()}
        to_write = group_offsets_to_sync(desired, idle_target_offsets.get(group))
        if to_write:
            result[group] = to_write
    return result
