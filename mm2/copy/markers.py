"""Positions past what a read_committed consumer never hands over: transaction markers and the
records of aborted transactions.

A copy task's position is the last offset it copied. On a transactional source topic the log
goes on behind that record (a commit marker, an aborted transaction's records and its marker),
so a topic that falls idle would keep a lag of those offsets for ever, and a flow whose lag
never reaches 0 looks stalled. librdkafka moves a consumer's position past markers and aborted
records as it reaches them in order, after handing over every record before them: once a
partition's position is beyond the next offset to copy, with no transaction open, nothing
between was a record to copy, and the position can move there.
"""

from __future__ import annotations

from collections.abc import Mapping

from confluent_kafka import Consumer, TopicPartition

from mm2.copy.spec import Assignment
from mm2.copy.stats import CopyStats
from mm2.copy.transaction import AbortableTransactionError, TransactionSink
from mm2.records import TP

__all__ = ["move_past_markers", "past_markers"]


def past_markers(consumer: Consumer, next_offsets: Mapping[TP, int]) -> dict[TP, int]:
    """The partitions whose consumer position is beyond their next offset to copy, with that
    position (the new next offset). Call only with no transaction open."""
    asked = [TopicPartition(t, p) for (t, p) in sorted(next_offsets)]
    moved: dict[TP, int] = {}
    for tp in consumer.position(asked) if asked else []:
        key = (tp.topic or "", tp.partition or 0)
        position = tp.offset or 0
        if position > max(next_offsets.get(key, 0), 0) and tp.error is None:
            moved[key] = position
    return moved


def move_past_markers(
    consumer: Consumer,
    sink: TransactionSink,
    next_offsets: Mapping[TP, int],
    assigned: Mapping[TP, Assignment],
) -> dict[TP, int]:
    """Commit, in a transaction of positions only, the partitions past_markers finds; returns
    their new next offsets ({} when none moved, or the transaction failed: tried again later)."""
    moved = past_markers(consumer, next_offsets)
    if not moved:
        return {}
    sink.begin()
    for (topic, partition), position in moved.items():
        assignment = assigned[(topic, partition)]
        stats = CopyStats(topic, partition, assignment.target_topic, position - 1)
        # No leader epoch: a marker written under a newer leader than the last record's would
        # make the older epoch's end look like a truncation below the position.
        sink.write_position(stats, assignment.topic_id)
    try:
        if sink.flush(60):
            raise AbortableTransactionError("positions not acknowledged", retriable=True)
        sink.commit()
    except AbortableTransactionError:
        sink.abort()
        return {}
    return moved
