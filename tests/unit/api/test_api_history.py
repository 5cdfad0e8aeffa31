"""The last hour of each flow's lag and throughput kept by the process (mm2.api.history), and
GET /flows/{source}/{target}/history that /ui's charts start from; no brokers."""

from __future__ import annotations

import gc
import threading
import time
from itertools import pairwise
from pathlib import Path
from typing import cast

from fastapi.testclient import TestClient

from mm2.api.app import create_app
from mm2.api.history import FlowHistory
from mm2.copy.stats import CopyStats
from mm2.runtime.flows import FlowLag, FlowView
from mm2.runtime.metrics import MetricsRegistry
from mm2.runtime.mirror_maker import MirrorMaker
from mm2.runtime.view import RuntimeView
from tests.support.api import make_mirror
from tests.support.waiting import eventually

FLOW = "/flows/primary/backup/history"


class Clock:
    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


def copied(mirror: MirrorMaker, records: int, lag: int) -> None:
    """`records` copied just now and `lag` records behind, as the copy tasks and the lag
    monitor record them."""
    now = int(time.time() * 1000)
    stats = CopyStats(
        "orders",
        0,
        "primary.orders",
        position=records - 1,
        first=0,
        records=records,
        min_timestamp=now - 5,
        max_timestamp=now - 1,
        sum_timestamp=(now - 3) * records,
        finished_ms=now,
    )
    mirror.metrics.record_batch("primary", "backup", [stats])
    mirror.metrics.update_lag("primary", "backup", {("orders", 0): ("primary.orders", lag, 2.5)})


def own_history(client: TestClient, mirror: RuntimeView, clock: Clock) -> FlowHistory:
    """The app's history replaced by one on `clock` that samples only when told."""
    app = client.app
    app.state.history.stop()  # type: ignore[attr-defined]
    history = FlowHistory(mirror, every=10.0, keep=60.0, clock=clock)
    app.state.history = history  # type: ignore[attr-defined]
    return history


def test_the_ring_is_bounded_ordered_and_an_hour_long(mirror: MirrorMaker) -> None:
    clock = Clock()
    history = FlowHistory(mirror, every=10.0, keep=60.0, clock=clock)
    assert history.size == 6
    for lag in range(10):
        copied(mirror, 300, lag)
        history.sample()
        clock.now += 10
    points = history.points("primary", "backup")
    assert [p.lag_records for p in points] == [4, 5, 6, 7, 8, 9]  # the newest 6, oldest first
    assert [b.time_ms - a.time_ms for a, b in pairwise(points)] == [10_000] * 5
    assert points[-1].lag_seconds == 2.5
    # the throughput is /metrics' record rate: records over the last 30 s, per second
    assert points[-1].records_per_second == 3000 / 30
    clock.now += 61  # nothing sampled for longer than it keeps: nothing shown
    assert history.points("primary", "backup") == []


def test_a_removed_flow_is_forgotten(tmp_path: Path) -> None:
    mirror = make_mirror(tmp_path)
    mirror.start()
    try:
        client = TestClient(create_app(mirror))
        body = {
            "source": "primary",
            "target": "dr",
            "overrides": {"topics": "payments"},
            "clusters": {"dr": {"bootstrap.servers": "localhost:3"}},
        }
        assert client.post("/flows", json=body).status_code == 201
        history = FlowHistory(mirror, clock=Clock())
        history.sample()
        assert len(history.points("primary", "dr")) == 1
        assert client.delete("/flows/primary/dr").status_code == 204
        history.sample()
        assert history.points("primary", "dr") == []
        assert len(history.points("primary", "backup")) == 2
    finally:
        mirror.stop()


class Standby:
    """The two views a history reads: one flow this process runs, one another process runs."""

    metrics = MetricsRegistry()

    @property
    def flows(self) -> Standby:  # its part for flows is itself
        return self

    def views(self) -> list[FlowView]:
        lag = FlowLag(1, 4, 1.0, 10)
        return [
            FlowView("a", "b", True, "RUNNING", (), lag),
            FlowView(
                "b",
                "a",
                True,
                "UNASSIGNED",
                (),
                lag,
                "runs on http://other:8083",
                runs_on="http://other:8083",
            ),
        ]


def test_a_flow_another_process_runs_is_not_sampled_here() -> None:
    history = FlowHistory(cast(RuntimeView, Standby()), clock=Clock())
    history.sample()
    assert [p.lag_records for p in history.points("a", "b")] == [4]
    assert history.points("b", "a") == []


def sampler_threads(before: set[threading.Thread]) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "flow-history" and t not in before]


def test_the_sampler_thread_samples_and_ends_with_its_history(mirror: MirrorMaker) -> None:
    before = set(threading.enumerate())
    history = FlowHistory(mirror, every=0.01)
    history.start()
    (thread,) = sampler_threads(before)
    deadline = time.monotonic() + 5
    while len(history.points("primary", "backup")) < 3:
        assert time.monotonic() < deadline, "not sampled three times in 5 s"
        time.sleep(0.01)
    del history  # the app that held it is gone: so is its sampler
    gc.collect()
    thread.join(5)
    assert not thread.is_alive()
    stopped = FlowHistory(mirror, every=0.01)
    stopped.start()
    stopped.stop()
    eventually(lambda: not sampler_threads(before), timeout=5, what="the sampler stopped")


def test_the_history_route_answers_the_kept_samples_oldest_first(mirror: MirrorMaker) -> None:
    client = TestClient(create_app(mirror))
    clock = Clock()
    history = own_history(client, mirror, clock)
    empty = client.get(FLOW)
    assert empty.status_code == 200
    assert empty.json() == {
        "source": "primary",
        "target": "backup",
        "sample_seconds": 10.0,
        "keep_seconds": 60.0,
        "points": [],
    }
    for lag in (7, 5, 3):
        copied(mirror, 60, lag)
        history.sample()
        clock.now += 10
    points = client.get(FLOW).json()["points"]
    assert [p["lag_records"] for p in points] == [7, 5, 3]
    assert [p["time_ms"] for p in points] == sorted(p["time_ms"] for p in points)
    assert set(points[0]) == {"time_ms", "lag_records", "lag_seconds", "records_per_second"}
    for _ in range(20):
        history.sample()
    assert len(client.get(FLOW).json()["points"]) == history.size


def test_the_history_of_an_unknown_flow_is_a_404_that_names_it(mirror: MirrorMaker) -> None:
    answer = TestClient(create_app(mirror)).get("/flows/primary/nowhere/history")
    assert answer.status_code == 404
    assert answer.json() == {"error_code": 404, "message": "no replication flow primary->nowhere"}


def test_the_app_samples_from_the_start_and_documents_the_route(mirror: MirrorMaker) -> None:
    client = TestClient(create_app(mirror))
    eventually(
        lambda: len(client.get(FLOW).json()["points"]) >= 1,
        timeout=5,
        what="the first sample, taken when the app is made",
    )
    operation = client.get("/openapi.json").json()["paths"]["/flows/{source}/{target}/history"]
    ok = operation["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert ok == {"$ref": "#/components/schemas/FlowHistoryBody"}
    assert "404" in operation["get"]["responses"]
