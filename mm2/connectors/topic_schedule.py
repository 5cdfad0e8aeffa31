"""The planner's periodic work on topics: routes, configs, ACLs and the source's end offsets.

Each step runs apart from the others when it is due, so that one cluster being away does not
hold up the others' work; a step that fails with a retriable error is tried again when next due.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Protocol

from mm2.connectors.every import Every
from mm2.copy.routes import Route
from mm2.errors import KafkaClientError
from mm2.records import TP

__all__ = ["EndOffsets", "RouteMetrics", "TopicSchedule", "TopicSyncing", "step"]

log = logging.getLogger(__name__)


class TopicSyncing(Protocol):
    """mm2.connectors.topic_sync.TopicSync."""

    def refresh_topics(self) -> dict[str, Route]: ...

    def sync_configs(self) -> int: ...

    def sync_acls(self) -> int: ...

    def max_message_bytes(self, remotes: Iterable[str]) -> dict[str, int]: ...


class EndOffsets(Protocol):
    """mm2.kafka.offsets.OffsetLister."""

    def offsets(
        self, partitions: list[TP], *, latest: bool, read_committed: bool
    ) -> dict[TP, int]: ...


class RouteMetrics(Protocol):
    """The part of mm2.runtime.metrics.MetricsRegistry the schedule feeds."""

    def set_routes(self, source: str, target: str, routes: Mapping[str, Route]) -> None: ...

    def lag_read_from_kafka(self, source: str, target: str) -> bool: ...

    def update_end_offsets(self, source: str, target: str, ends: Mapping[TP, int]) -> None: ...


def step(flow: str, what: str, action: Callable[[], object]) -> None:
    """Run `action`; a retriable failure is logged and left for the next time."""
    try:
        action()
    except KafkaClientError as exc:
        if not exc.retriable:
            raise
        log.warning("%s: %s failed, trying again later: %s", flow, what, exc)


class TopicSchedule:
    """Keeps the target's topics in step with the source, each kind of sync on its interval."""

    def __init__(
        self,
        flow: str,
        source: str,
        target: str,
        *,
        sync: TopicSyncing,
        ends: EndOffsets,
        metrics: RouteMetrics,
        read_committed: bool,
        refresh_seconds: float,
        configs_seconds: float | None,
        acls_seconds: float | None,
    ) -> None:
        self._flow, self._source, self._target = flow, source, target
        self._sync = sync
        self._ends = ends
        self._metrics = metrics
        self._read_committed = read_committed
        self._refresh = Every(refresh_seconds)
        self._configs = Every(configs_seconds)
        self._acls = Every(acls_seconds)
        self.routes: dict[str, Route] = {}

    def refresh_routes(self) -> None:
        """The topics made ready on the target (creating what is missing), as routes."""
        routes = self._sync.refresh_topics()
        if routes != self.routes:
            self.routes = routes
            self._metrics.set_routes(self._source, self._target, routes)

    def max_message_bytes(self, remotes: Iterable[str]) -> dict[str, int]:
        """Each remote topic's max.message.bytes, where known (the bound of a copy task's
        record batches: mm2.copy.transaction)."""
        return self._sync.max_message_bytes(remotes)

    def update_lag(self) -> None:
        # Only until the lag monitor (mm2.runtime.lag, every 3 s) has read the flow's partitions:
        # its figures win, and at 10,000 partitions a second ListOffsets every 2 s costs.
        if self._metrics.lag_read_from_kafka(self._source, self._target):
            return
        partitions = [(t, p) for t, r in self.routes.items() for p in range(r.partitions)]
        ends = self._ends.offsets(partitions, latest=True, read_committed=self._read_committed)
        self._metrics.update_end_offsets(self._source, self._target, ends)

    def run_due(self, now: float) -> None:
        if self._refresh.due(now):
            step(self._flow, "refreshing topics", self.refresh_routes)
            step(self._flow, "reading the source's end offsets", self.update_lag)
        if self._configs.due(now):
            step(self._flow, "syncing topic configs", self._sync.sync_configs)
        if self._acls.due(now):
            step(self._flow, "syncing ACLs", self._sync.sync_acls)
