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
from mm2.offset_syncs.sync_writer import (
    MAX_OUTSTANDING_OFFSET_SYNCS,
    OffsetSyncWriter,
    PartitionState,
)

__all__ = [
    "MAX_OUTSTANDING_OFFSET_SYNCS",
    "SYNCS_PER_PARTITION",
    "OffsetSyncStore",
    "OffsetSyncWriter",
    "PartitionState",
    "ReplicationPolicyLike",
    "checkpoint_for",
    "checkpoint_is_more_recent",
    "checkpoints_for_group",
    "group_offsets_to_sync",
    "rename_topic_partition",
    "sync_group_offsets",
]
