"""Offset syncs and checkpoints without a broker: when to sync, how to translate, what to write."""

from mm2.offset_syncs.checkpoint_rules import (
    ReplicationPolicyLike,
    checkpoint_for,
    checkpoint_is_more_recent,
    checkpoints_for_group,
    group_offsets_to_sync,
    rename_topic_partition,
    sync_group_offsets,
)
from mm2.offset_syncs.sync_store import SYNCS_PER_PARTITION, OffsetSyncStore
from mm2.offset_syncs.sync_writer import PartitionState

__all__ = [
    "SYNCS_PER_PARTITION",
    "OffsetSyncStore",
    "PartitionState",
    "ReplicationPolicyLike",
    "checkpoint_for",
    "checkpoint_is_more_recent",
    "checkpoints_for_group",
    "group_offsets_to_sync",
    "rename_topic_partition",
    "sync_group_offsets",
]
