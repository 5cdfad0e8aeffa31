"""What each copy task of an epoch is handed (mm2.copy.spec.CopyTaskSpec): its partitions, each
with where it starts, the flow's settings as they are, and where it writes and reads besides.

Where a partition starts: its committed position, or where the flow's consumer group or
auto.offset.reset says when it has none (mm2.connectors.progress_group), or the start of its
log when its source topic was deleted and created again since the position was stored.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from mm2.connect.spi import LeaderEpoch
from mm2.connectors.deal import Placed
from mm2.connectors.planner_parts import FlowParts
from mm2.copy.spec import BEGINNING, Assignment, CopyTaskSpec
from mm2.records import TP

__all__ = ["StartOffsets", "TaskSpecs"]

log = logging.getLogger(__name__)


class StartOffsets(Protocol):
    """Where partitions without a position start (mm2.connectors.progress_group)."""

    def start_offsets(self) -> dict[TP, int]: ...


class TaskSpecs:
    """Builds an epoch's copy task specs and the assignments of partitions added to it."""

    def __init__(
        self,
        parts: FlowParts,
        *,
        syncs_target: Callable[[], tuple[str, dict[str, str] | None]],
        start_offsets: StartOffsets | None = None,
        is_heartbeats: Callable[[str], bool] = lambda _topic: False,
        leader: Callable[[], LeaderEpoch | None] = lambda: None,
    ) -> None:
        self.settings = parts.settings
        self._parts = parts
        self._syncs_target = syncs_target
        self._start_offsets = start_offsets
        self._is_heartbeats = is_heartbeats
        self._leader = leader
        self._syncs: tuple[str, dict[str, str] | None] = ("", None)
        self._group_start: dict[TP, int] = {}
        self._recreated: set[tuple[str, str]] = set()  # (topic, stored id) announced

    def prepare(self) -> None:
        """The offset-syncs topic (created when missing) and its producer's config."""
        self._syncs = self._syncs_target()

    def read_starts(self) -> None:
        """Where partitions without a position start, as the consumer group says now."""
        if self._start_offsets is not None:
            self._group_start = self._start_offsets.start_offsets()

    def specs(
        self,
        dealt: Sequence[Sequence[Placed]],
        *,
        cluster_id: str,
        ids: Sequence[str],
        epoch: str,
        limits: Mapping[str, int],
    ) -> list[CopyTaskSpec]:
        s = self.settings
        syncs_topic, syncs_producer = self._syncs
        lead = self._leader()
        return [
            CopyTaskSpec(
                settings=s,
                task=i,
                connector=self._parts.positions.connector,
                source_cluster_id=cluster_id,
                offsets_topic=self._parts.positions.topic,
                partitions=[self.assignment(t, p, target) for t, p, target in part],
                transactional_id=ids[i] if s.exactly_once else None,
                syncs_topic=syncs_topic,
                syncs_producer=syncs_producer,
                epoch=epoch,
                offsets_consumer=dict(self._parts.positions.consumer_config),
                offsets_admin=dict(self._parts.positions.admin_config),
                topic_limits={target: limits[target] for *_, target in part if target in limits},
                leader_topic=lead.topic if lead is not None else "",
                leader_epoch=lead.epoch if lead is not None else "",
            )
            for i, part in enumerate(dealt)
        ]

    def assignment(self, topic: str, partition: int, target: str) -> Assignment:
        route = self._parts.schedule.routes.get(topic)
        topic_id = route.topic_id if route is not None else ""
        heartbeats = self._is_heartbeats(topic)
        return Assignment(
            topic,
            partition,
            target,
            self._next_offset(topic, partition, topic_id),
            topic_id,
            as_is=self.settings.schema_ids and heartbeats,
            heartbeats=heartbeats,
        )

    def _next_offset(self, topic: str, partition: int, topic_id: str) -> int:
        tp = (topic, partition)
        stored = self._parts.feed.stored
        start = stored.next_offset(tp, topic_id, self._group_start.get(tp, -1))
        was = stored.topic_ids.get(tp, "")
        if start == BEGINNING and (topic, was) not in self._recreated:  # announced once
            self._recreated.add((topic, was))
            log.warning(
                "%s: source topic %s was deleted and created again since its positions "
                "were stored (topic id %s, stored for %s): copying it from the start of "
                "its log",
                self.settings.flow,
                topic,
                topic_id,
                was,
            )
            self._parts.metrics.topic_recreated(self.settings.source, self.settings.target, topic)
        return start
