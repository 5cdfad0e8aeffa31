"""Offset syncs from each micro-batch's offset runs, on the cluster the location setting names."""

from __future__ import annotations

from collections.abc import Sequence

from mm2.client.syncs import syncs_location
from mm2.config.model import Flow
from mm2.kafka.copier import CopyResult
from mm2.kafka.producer import RecordProducer
from mm2.offsets.exact_index import PREV_SYNC_HEADER, PrevSync, encode_prev_sync
from mm2.offsets.sync_trail import SyncTrail
from mm2.records import OffsetSync

__all__ = ["OffsetSyncEmitter"]


class OffsetSyncEmitter:
    """Apache's emission rule (offset.lag.max, skipped upstream offsets, truncation) per run,
    plus a sync at both ends of every copy run (mm2.offsets.sync_trail).

    Each sync carries the previous sync of its partition in a `mm2.prev-sync` header, so the
    checkpoint task can prove two syncs consecutive and translate between them exactly
    (mm2.offsets.exact_index). Apache's readers ignore headers.
    """

    def __init__(self, topic: str, producer: RecordProducer | None, max_offset_lag: int) -> None:
        self.topic = topic
        self._producer = producer
        self._lag = max_offset_lag
        self._trails: dict[tuple[str, int], SyncTrail] = {}

    @classmethod
    def for_flow(cls, flow: Flow) -> OffsetSyncEmitter:
        location = syncs_location(flow)
        if not flow.get_bool("emit.offset-syncs.enabled", True):
            return cls(location.topic, None, flow.offset_lag_max)
        location.create_topic(flow.get_int("offset-syncs.topic.replication.factor", 3))
        producer = RecordProducer(location.producer_config)
        return cls(location.topic, producer, flow.offset_lag_max)

    def syncs(self, results: Sequence[CopyResult]) -> list[tuple[OffsetSync, PrevSync | None]]:
        """The syncs a batch calls for, in order per partition, with their headers."""
        out: list[tuple[OffsetSync, PrevSync | None]] = []
        for res in results:
            if not res.runs:
                continue
            key = (res.unit.topic, res.unit.partition)
            trail = self._trails.setdefault(key, SyncTrail(self._lag))
            for up, down, prev in trail.points(res.runs):
                out.append((OffsetSync(key[0], key[1], up, down), prev))
        return out

    def emit(self, results: Sequence[CopyResult]) -> None:
        """Write the batch's syncs and wait for them (the records are on the target already)."""
        if self._producer is None:
            return
        syncs = self.syncs(results)
        for sync, prev in syncs:
            headers = {} if prev is None else {PREV_SYNC_HEADER: encode_prev_sync(prev)}
            self._producer.send(
                self.topic, sync.to_key_bytes(), sync.to_value_bytes(), headers=headers
            )
        if syncs:
            self._producer.flush()

    def close(self) -> None:
        if self._producer is not None:
            self._producer.flush(10)
