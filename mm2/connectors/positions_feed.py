"""The planner's view of a flow's committed positions, and the metrics that follow from them.

The planner reads the offsets topic to its end before each copy epoch (after fencing: nothing
uncommitted holds it back) and follows it between epochs; every position a copy task commits
carries what it copied (mm2.copy.stats), which feeds the metrics here. So metrics count only
committed records, on every node that follows the topic, and only those committed since the
feed first read the topic to its end: what was there before (the history a restarted planner
or process reads again) moves the positions but is never counted a second time.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Protocol

from mm2.copy.offsets_reader import KeyPartitions
from mm2.copy.position_record import PositionRecord, StoredPositions
from mm2.copy.ready import CopyReady
from mm2.copy.routes import Route
from mm2.copy.stats import CopyStats
from mm2.records import TP

__all__ = ["BatchMetrics", "PositionsFeed", "ReaderSource", "Tail"]

log = logging.getLogger(__name__)


class Tail(Protocol):
    """What the feed reads the offsets topic with (mm2.copy.offsets_reader.OffsetsTopicReader)."""

    def read_to_end(
        self, timeout: float = ..., *, holding: KeyPartitions | None = ...
    ) -> list[PositionRecord]: ...

    def poll(self, timeout: float = ...) -> list[PositionRecord]: ...

    def close(self) -> None: ...


class ReaderSource(Protocol):
    """Opens a reader of the offsets topic (mm2.copy.positions.PositionsTopic), and says which
    of its partitions hold the positions of some source partitions."""

    def reader(self, on_ready: Callable[[CopyReady], None] | None = ...) -> Tail: ...

    def holding(self, partitions: Iterable[TP]) -> KeyPartitions: ...


class BatchMetrics(Protocol):
    """Where committed copies are counted (mm2.runtime.metrics.MetricsRegistry)."""

    def record_batch(self, source: str, target: str, results: list[CopyStats]) -> None: ...


class PositionsFeed:
    """A flow's positions as committed, read from its offsets topic."""

    def __init__(
        self,
        flow: str,
        source: str,
        target: str,
        topic: ReaderSource,
        metrics: BatchMetrics,
    ) -> None:
        """A read to the end waits only for the partitions of the offsets topic that hold the
        routed partitions' positions (`topic.holding`)."""
        self._flow, self._source, self._target = flow, source, target
        self._topic = topic
        self._metrics = metrics
        self.stored = StoredPositions()
        self._reader: Tail | None = None
        self._copied = 0
        self._last_report = time.monotonic()
        self._history = True  # until the first read to the end: positions only, no counts
        # The epoch in which each copy task last said it copies (mm2.copy.ready).
        self.ready: dict[int, str] = {}

    def open(self) -> None:
        """Make the reader (not read yet: a killed copy task's open transaction holds the
        topic's end back until the first epoch fences it)."""
        self._reader = self._reader or self._topic.reader(on_ready=self._ready)

    def _ready(self, notice: CopyReady) -> None:
        self.ready[notice.task] = notice.epoch

    def read_to_end(self, routes: Mapping[str, Route], timeout: float) -> None:
        assert self._reader is not None, "open() first"
        holding = self._topic.holding(
            (topic, p) for topic, route in routes.items() for p in range(route.partitions)
        )
        self._apply(self._reader.read_to_end(timeout, holding=holding), routes)
        self._history = False

    def poll(self, routes: Mapping[str, Route]) -> None:
        """Take what copy tasks committed since the last look; does not wait."""
        if self._reader is not None:
            self._apply(self._reader.poll(0), routes)

    def _apply(self, records: list[PositionRecord], routes: Mapping[str, Route]) -> None:
        self.stored.apply(records)
        results = []
        for r in records:
            route = routes.get(r.topic)
            if r.offset is None or route is None:
                continue
            s = None if self._history else r.stats
            res = CopyStats(r.topic, r.partition, route.target_topic, position=r.offset)
            if s is not None:
                res = dataclasses.replace(s, target_topic=route.target_topic, position=r.offset)
            if s is not None and s.skipped:
                log.warning(
                    "%s: skipped %d record(s) of %s-%d larger than %s accepts",
                    self._flow,
                    s.skipped,
                    r.topic,
                    r.partition,
                    route.target_topic,
                )
            results.append(res)
        if results:
            self._metrics.record_batch(self._source, self._target, results)
            self._copied += sum(r.records for r in results)
        now = time.monotonic()
        if now - self._last_report >= 30:
            log.info("%s: %d records copied so far", self._flow, self._copied)
            self._last_report = now

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
