"""Offset syncs from copied runs, written where the flow keeps them (run by each copy task)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from mm2.kafka.producer import RecordProducer
from mm2.offset_syncs.exact_index import PREV_SYNC_HEADER, PrevSync, encode_prev_sync
from mm2.offset_syncs.sync_trail import SyncTrail
from mm2.records import OffsetSync

__all__ = ["CopiedRuns", "OffsetSyncEmitter"]


class CopiedRuns(Protocol):
    """What a copy task committed of one partition: (upstream, downstream, length) runs
    (mm2.copy.stats.CopyStats)."""

    @property
    def topic(self) -> str: ...

    @property
    def partition(self) -> int: ...

    @property
    def runs(self) -> list[tuple[int, int, int]]: ...


class OffsetSyncEmitter:
    """Apache's emission rule (offset.lag.max, skipped upstream offsets, truncation) per run,
    plus a sync at both ends of every copy run (mm2.offset_syncs.sync_trail).

    Each sync carries the previous sync of its partition in a `mm2.prev-sync` header, so the
    checkpoint task can prove two syncs consecutive and translate between them exactly
    (mm2.offset_syncs.exact_index). Apache's readers ignore headers. `producer_config` None: syncs
    are not emitted (emit.offset-syncs.enabled=false).
    """

    def __init__(
        self, topic: str, producer_config: Mapping[str, str] | None, max_offset_lag: int
    ) -> None:
        self.topic = topic
        self._producer = None if producer_config is None else RecordProducer(producer_config)
        self._lag = max_offset_lag
        self._trails: dict[tuple[str, int], SyncTrail] = {}

    def syncs(self, results: Sequence[CopiedRuns]) -> list[tuple[OffsetSync, PrevSync | None]]:
        """The syncs the copied runs call for, in order per partition, with their headers."""
        out: list[tuple[OffsetSync, PrevSync | None]] = []
        for res in results:
            if not res.runs:
                continue
            key = (res.topic, res.partition)
            trail = self._trails.setdefault(key, SyncTrail(self._lag))
            for up, down, prev in trail.points(res.runs):
                out.append((OffsetSync(key[0], key[1], up, down), prev))
        return out

    def emit(self, results: Sequence[CopiedRuns], *, wait: bool = True) -> None:
        """Send the syncs of records already on the target; `wait` for their acknowledgement
        (otherwise a failure surfaces at the next call)."""
        if self._producer is None:
            return
        self._producer.raise_failure()
        syncs = self.syncs(results)
        for sync, prev in syncs:
            headers = {} if prev is None else {PREV_SYNC_HEADER: encode_prev_sync(prev)}
            self._producer.send_record(self.topic, sync, headers=headers)
        if syncs and wait:
            self._producer.flush()

    def close(self, timeout: float = 5.0) -> None:
        if self._producer is not None:
            self._producer.flush(timeout)
