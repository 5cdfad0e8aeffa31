"""The positions feed counts what copy tasks commit from its first read on, never history: a
planner restarted (or a process started) reads the whole offsets topic again."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from mm2.connectors.positions_feed import PositionsFeed
from mm2.copy.offsets_reader import KeyPartitions
from mm2.copy.position_record import PositionRecord
from mm2.copy.ready import CopyReady
from mm2.copy.routes import Route
from mm2.copy.stats import CopyStats
from mm2.runtime.metrics import MetricsRegistry

ROUTES = {"orders": Route("orders", "primary.orders", 1)}


def committed(offset: int, records: int) -> PositionRecord:
    stats = CopyStats(
        "orders",
        0,
        "",
        position=offset,
        first=offset - records + 1,
        records=records,
        bytes=10 * records,
    )
    return PositionRecord("orders", 0, offset, "c", stats, "id")


class Topic:
    """The offsets topic: history first, then what is committed later."""

    def __init__(self) -> None:
        self.history = [committed(99, 100), committed(199, 100)]
        self.later: list[PositionRecord] = []

    def reader(self, on_ready: Callable[[CopyReady], None] | None = None) -> Topic:
        self.on_ready = on_ready
        return self

    def holding(self, partitions: Iterable[tuple[str, int]]) -> KeyPartitions:
        self.held = sorted(partitions)
        return lambda count: set(range(count))  # every partition waited for

    def read_to_end(
        self, timeout: float = 0.0, *, holding: KeyPartitions | None = None
    ) -> list[PositionRecord]:
        out, self.history = self.history, []
        return out

    def close(self) -> None: ...

    def poll(self, timeout: float = 0.0) -> list[PositionRecord]:
        out, self.later = self.later, []
        return out


def copied(metrics: MetricsRegistry) -> int:
    return sum(s.record_count for s in metrics.snapshot())


def test_history_moves_positions_and_only_new_commits_count() -> None:
    topic, metrics = Topic(), MetricsRegistry()
    feed = PositionsFeed("primary->backup", "primary", "backup", topic, metrics)
    feed.open()
    feed.read_to_end(ROUTES, 5.0)
    assert topic.held == [("orders", 0)]  # waits for where the routed partitions' keys are
    assert feed.stored.offsets == {("orders", 0): 199}
    assert copied(metrics) == 0  # 200 records committed before: not this feed's to count
    topic.later = [committed(249, 50)]
    feed.poll(ROUTES)
    assert copied(metrics) == 50 and feed.stored.offsets == {("orders", 0): 249}


def test_copy_tasks_notices_are_kept_per_task_with_their_epoch() -> None:
    topic = Topic()
    feed = PositionsFeed("primary->backup", "primary", "backup", topic, MetricsRegistry())
    feed.open()
    assert topic.on_ready is not None
    topic.on_ready(CopyReady("primary->backup", 1, "e1"))
    topic.on_ready(CopyReady("primary->backup", 1, "e2"))
    assert feed.ready == {1: "e2"}
