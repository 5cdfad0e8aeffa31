"""Offset syncs from each micro-batch's offset runs, on the cluster the location setting names."""

from __future__ import annotations

from collections.abc import Sequence

from mm2.config.model import Flow
from mm2.kafka.copier import CopyResult
from mm2.kafka.producer import RecordProducer
from mm2.kafka.topics import TopicAdmin
from mm2.offsets import PartitionState
from mm2.records import OffsetSync

__all__ = ["OffsetSyncEmitter"]


class OffsetSyncEmitter:
    """Apache's emission rule (offset.lag.max, skipped upstream offsets, truncation) per run,
    plus one sync at the end of every micro-batch, where Apache would promote its delayed sync.
    """

    def __init__(self, topic: str, producer: RecordProducer | None, max_offset_lag: int) -> None:
        self.topic = topic
        self._producer = producer
        self._lag = max_offset_lag
        self._states: dict[tuple[str, int], PartitionState] = {}

    @classmethod
    def for_flow(cls, flow: Flow) -> OffsetSyncEmitter:
        policy = flow.replication_policy()
        if not flow.get_bool("emit.offset-syncs.enabled", True):
            return cls(policy.offset_syncs_topic(flow.target), None, flow.offset_lag_max)
        on_target = flow.offset_syncs_topic_location == "target"
        side = "target" if on_target else "source"
        # The name carries the alias of the cluster the topic is *not* on.
        topic = policy.offset_syncs_topic(flow.source if on_target else flow.target)
        admin = (flow.target_admin_config if on_target else flow.source_admin_config)(
            label=f"offset-syncs-{side}-admin"
        )
        TopicAdmin(admin).create_compacted_topic(
            topic,
            replication_factor=flow.get_int("offset-syncs.topic.replication.factor", 3),
        )
        producer_config = (
            flow.target_producer_config if on_target else flow.source_producer_config
        )(label=f"offset-syncs-{side}-producer")
        return cls(topic, RecordProducer(producer_config), flow.offset_lag_max)

    def syncs(self, results: Sequence[CopyResult]) -> list[OffsetSync]:
        """The syncs a batch calls for, in order, per partition."""
        out: list[OffsetSync] = []
        for res in results:
            if not res.runs:
                continue
            key = (res.unit.topic, res.unit.partition)
            state = self._states.setdefault(key, PartitionState(self._lag))
            pairs: list[tuple[int, int]] = []
            for up, down, length in res.runs:
                pairs.extend(state.update_run(up, down, length))
            up, down, length = res.runs[-1]
            boundary = (up + length - 1, down + length - 1)
            if not pairs or pairs[-1] != boundary:
                pairs.append(boundary)
            out.extend(OffsetSync(key[0], key[1], u, d) for u, d in pairs)
        return out

    def emit(self, results: Sequence[CopyResult]) -> None:
        """Write the batch's syncs and wait for them (the records are on the target already)."""
        if self._producer is None:
            return
        syncs = self.syncs(results)
        for sync in syncs:
            self._producer.send(self.topic, sync.to_key_bytes(), sync.to_value_bytes())
        if syncs:
            self._producer.flush()

    def close(self) -> None:
        if self._producer is not None:
            self._producer.flush(10)
