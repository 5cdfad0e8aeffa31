"""What the epoch planner (mm2.connectors.epochs) needs of its collaborators, as protocols: the
flow's offsets topic (mm2.copy.positions.PositionsTopic), the committed positions and ready
notices read from it (mm2.connectors.positions_feed.PositionsFeed), and the routes of the topics
ready on the target (mm2.connectors.topic_schedule.TopicSchedule), and the figures they record
(mm2.runtime.metrics.MetricsRegistry). `build_parts` in
mm2.connectors.source hands in the real ones; the planner's unit tests hand in small fakes."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from mm2.copy.position_record import StoredPositions
from mm2.copy.positions import TaskPositions
from mm2.copy.routes import Route
from mm2.copy.settings import CopySettings
from mm2.records import TP

__all__ = ["FlowParts", "PlannerFeed", "PlannerMetrics", "PlannerPositions", "PlannerSchedule"]


class PlannerPositions(TaskPositions, Protocol):
    """The flow's offsets topic: created, written outside copy tasks, and handed to them."""

    @property
    def connector(self) -> str: ...

    @property
    def consumer_config(self) -> Mapping[str, str]: ...

    @property
    def admin_config(self) -> Mapping[str, str]: ...

    def ensure(self) -> bool:
        """Create the topic when it is missing; True when it was created now."""
        ...

    def source_cluster_id(self) -> str: ...

    def write(
        self,
        positions: Mapping[TP, int | None],
        *,
        cluster_id: str,
        topic_ids: Mapping[TP, str],
        leader_epochs: Mapping[TP, int] | None = None,
    ) -> None:
        """The settle writes positions tagged with the source cluster's id and topic ids."""


class PlannerFeed(Protocol):
    """The positions the copy tasks committed and the epochs they said they are ready in."""

    @property
    def stored(self) -> StoredPositions: ...

    @property
    def ready(self) -> Mapping[int, str]:
        """The epoch each copy task said it is ready in, by task."""
        ...

    def open(self) -> None: ...

    def read_to_end(self, routes: Mapping[str, Route], timeout: float) -> None: ...


class PlannerSchedule(Protocol):
    """The routes of the source topics whose remote topics are ready on the target."""

    @property
    def routes(self) -> Mapping[str, Route]: ...

    def refresh_routes(self) -> None: ...

    def max_message_bytes(self, remotes: Iterable[str]) -> dict[str, int]: ...


class PlannerMetrics(Protocol):
    """What the planner (owners), its settle (transactions ended) and its task specs (topics
    deleted and created again) record."""

    def set_owners(self, source: str, target: str, owners: Mapping[TP, int]) -> None: ...

    def transactions_ended(self, source: str, target: str, partitions: Sequence[str]) -> None: ...

    def topic_recreated(self, source: str, target: str, topic: str) -> None: ...


@dataclass(frozen=True)
class FlowParts:
    """What the planner, its settle and its task specs share: the flow's copy settings (one
    value, handed to every copy task as it is), its offsets topic, the positions read from it,
    the routes of its topics and the metrics they record."""

    settings: CopySettings
    positions: PlannerPositions
    feed: PlannerFeed
    schedule: PlannerSchedule
    metrics: PlannerMetrics
