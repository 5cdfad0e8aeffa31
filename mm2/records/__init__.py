"""Apache MM2 wire formats: offset syncs, checkpoints, heartbeats and Connect offsets."""

from mm2.records.checkpoint import Checkpoint
from mm2.records.connect_offsets import (
    ConnectOffsetKey,
    ConnectPartition,
    MirrorCheckpointPartition,
    MirrorHeartbeatPartition,
    MirrorSourcePartition,
    decode_offset_value,
    encode_offset_value,
)
from mm2.records.heartbeat import Heartbeat
from mm2.records.offset_sync import OffsetSync
from mm2.records.partition import TP, OffsetAndMetadata, TopicPartition

__all__ = [
    "TP",
    "Checkpoint",
    "ConnectOffsetKey",
    "ConnectPartition",
    "Heartbeat",
    "MirrorCheckpointPartition",
    "MirrorHeartbeatPartition",
    "MirrorSourcePartition",
    "OffsetAndMetadata",
    "OffsetSync",
    "TopicPartition",
    "decode_offset_value",
    "encode_offset_value",
]
