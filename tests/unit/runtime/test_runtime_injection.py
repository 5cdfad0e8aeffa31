"""What injection makes possible: the REST API over a fake RuntimeView, tasks and lag figures
recorded into the registries a worker was given (no process-wide METRICS or LIVENESS)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import cast

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from mm2.api import root
from mm2.api.app import create_app
from mm2.client.failover import Applied
from mm2.client.lag import LagReport, PartitionLag
from mm2.client.plan import FailoverPlan, PartitionMove
from mm2.client.recovery import RecoveryPoint
from mm2.client.switchover_report import FlowControl
from mm2.config import load_properties, parse_properties
from mm2.connect.spi import Connector, Task, TaskContext
from mm2.copy.routes import Route
from mm2.errors import NotFoundError
from mm2.records import TopicPartition
from mm2.runtime.changes import ChangeStore
from mm2.runtime.connector_admin import ConnectorInfo
from mm2.runtime.flows import FlowLag, FlowView
from mm2.runtime.herder import Herder, Plugins
from mm2.runtime.liveness import Liveness
from mm2.runtime.metrics import MetricsRegistry
from mm2.runtime.mirror_maker import MirrorMaker
from mm2.runtime.offsets import ConnectorOffset
from mm2.runtime.standby import Leader
from mm2.runtime.status import ConnectorStatus, TaskStatus
from mm2.runtime.switchovers import SwitchoverJob
from mm2.runtime.task_runner import Backoff
from mm2.runtime.validation import ConfigCheck
from mm2.runtime.view import RuntimeView

FAST = Backoff(0.01, 0.05)


def eventually(check: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.01)


class FakeConnectors:
    """One connector of flow a->b, RUNNING; nothing else exists."""

    def __init__(self, worker_id: str) -> None:
        self.worker_id = worker_id
        self.paused: list[str] = []

    def flow_of(self, name: str) -> str:
        return "a->b"

    def names(self) -> list[str]:
        return ["a.b.MirrorHeartbeatConnector"]

    def statuses(self) -> list[tuple[str, ConnectorStatus]]:
        return [("a->b", self.status("a.b.MirrorHeartbeatConnector"))]

    def info(self, name: str) -> ConnectorInfo:
        raise NotFoundError(f"Connector {name} not found")

    def status(self, name: str) -> ConnectorStatus:
        task = TaskStatus(0, "RUNNING", self.worker_id)
        return ConnectorStatus(name, "RUNNING", self.worker_id, (task,))

    def task_configs(self, name: str) -> list[dict[str, str]]:
        return []

    def task_status(self, name: str, task: int) -> TaskStatus:
        return self.status(name).tasks[0]

    def put_config(self, name: str, config: Mapping[str, str]) -> tuple[bool, ConnectorInfo]:
        raise NotFoundError(f"Connector {name} not found")

    def patch_config(self, name: str, patch: Mapping[str, str | None]) -> ConnectorInfo:
        raise NotFoundError(f"Connector {name} not found")

    def delete(self, name: str) -> None:
        raise NotFoundError(f"Connector {name} not found")

    def pause(self, name: str) -> None:
        self.paused.append(name)

    def resume(self, name: str) -> None: ...
    def stop(self, name: str) -> None: ...

    def restart(self, name: str, *, include_tasks: bool, only_failed: bool) -> ConnectorStatus:
        return self.status(name)

    def restart_task(self, name: str, task: int) -> None: ...

    def validate(self, plugin: str, config: Mapping[str, str]) -> ConfigCheck:
        raise NotFoundError(f"no connector plugin {plugin!r}")


class FakeOffsets:
    def read(self, name: str) -> list[ConnectorOffset]:
        return []

    def alter(self, name: str, offsets: Sequence[ConnectorOffset]) -> None: ...
    def reset(self, name: str) -> None: ...


class FakeFlows:
    """The one flow a->b; on a standby (`leader_url` set) it runs on that leader."""

    def __init__(self, connectors: FakeConnectors) -> None:
        self.connectors = connectors
        self.report: LagReport | None = None
        self.plans: list[FailoverPlan] = []
        self.leader_url: str | None = None

    def views(self) -> list[FlowView]:
        return [self.view("a", "b")]

    def view(self, source: str, target: str) -> FlowView:
        if (source, target) != ("a", "b"):
            raise NotFoundError(f"no replication flow {source}->{target}")
        connectors = tuple(self.connectors.names())
        if self.leader_url is not None:
            cause = f"runs on {self.leader_url}, the leader of b"
            return FlowView(
                "a",
                "b",
                True,
                "UNASSIGNED",
                connectors,
                FlowLag(0, 0, 0.0, 0),
                cause,
                runs_on=self.leader_url,
            )
        return FlowView("a", "b", True, "RUNNING", connectors, FlowLag(0, 0, 0.0, 0))

    def lag(self, source: str, target: str) -> LagReport | None:
        return self.report

    def group_offsets(self, source: str, target: str, timeout: float = 15.0) -> list[FailoverPlan]:
        self.view(source, target)
        return self.plans

    def recovery_point(self, source: str, target: str, timeout: float = 15.0) -> RecoveryPoint:
        self.view(source, target)
        return RecoveryPoint(f"{source}->{target}", 0, ())

    def failover_group(
        self, source: str, target: str, group: str, *, force: bool = False, timeout: float = 15.0
    ) -> tuple[FailoverPlan, Applied]:
        raise NotImplementedError

    def pause(self, source: str, target: str) -> None:
        for name in self.connectors.names():
            self.connectors.pause(name)

    def resume(self, source: str, target: str) -> None: ...
    def stop(self, source: str, target: str) -> None: ...

    def add(
        self,
        source: str,
        target: str,
        clusters: Mapping[str, Mapping[str, str]],
        overrides: Mapping[str, str],
    ) -> FlowView:
        return self.view(source, target)

    def remove(self, source: str, target: str) -> None: ...


class FakeLeadership:
    def leads(self, flow: str) -> bool:
        return True

    def writer(self) -> Leader | None:
        return None

    def runner(self, flow: str) -> Leader | None:
        return None

    def leaders(self) -> dict[str, Leader | None]:
        return {}


class FakeSwitchovers:
    def __init__(self, flows: FakeFlows) -> None:
        self.flows = flows

    def start(
        self,
        source: str,
        target: str,
        *,
        dry_run: bool,
        start_reverse: bool,
        drain_timeout: float,
        control: FlowControl | None = None,
    ) -> SwitchoverJob:
        self.flows.view(source, target)
        return SwitchoverJob(f"{source}->{target}", dry_run, start_reverse, 0)

    def job(self, source: str, target: str) -> SwitchoverJob | None:
        return None


class FakeRuntime:
    """A RuntimeView with one flow a->b and one connector, and registries of its own."""

    healthy = True
    worker_id = "fake-worker"
    url = None

    def __init__(self) -> None:
        self.metrics = MetricsRegistry()
        self.liveness = Liveness()
        self.plugins: Plugins = {}
        self.connectors = FakeConnectors(self.worker_id)
        self.offsets = FakeOffsets()
        self.flows = FakeFlows(self.connectors)
        self.leadership = FakeLeadership()
        self.switchovers = FakeSwitchovers(self.flows)


def app_over(fake: FakeRuntime) -> FastAPI:
    """The REST API over the fake. RuntimeView names the real parts (the routers are checked
    against their signatures); the fake's parts stand in for them by their methods alone."""
    return create_app(cast(RuntimeView, fake))


def test_the_api_runs_over_fake_parts() -> None:
    fake = FakeRuntime()
    client = TestClient(app_over(fake))
    assert client.get("/health").status_code == 200
    assert client.get("/connectors").json() == ["a.b.MirrorHeartbeatConnector"]
    assert client.get("/flows/a/b").json()["state"] == "RUNNING"
    assert client.get("/flows/a/c").status_code == 404
    assert client.put("/flows/a/b/pause").status_code == 202
    assert fake.connectors.paused == ["a.b.MirrorHeartbeatConnector"]


def test_metrics_and_partitions_read_the_views_own_registries() -> None:
    fake = FakeRuntime()
    fake.metrics.set_routes("a", "b", {"t": Route("t", "a.t", 1)})
    fake.metrics.update_lag("a", "b", {("t", 0): ("a.t", 7, 1.5)})
    fake.liveness.heartbeat("a", "b", 1_700_000_000.0)
    fake.flows.report = LagReport("a->b", 1, (PartitionLag("t", 0, 10, 3, 7, 1.5),))
    client = TestClient(app_over(fake))
    text = client.get("/metrics").text
    assert (
        'mm2_replication_lag_records{partition="0",source="a",target="b",topic="a.t"} 7.0' in text
    )
    assert 'mm2_heartbeat_count_total{source="a",target="b"} 1.0' in text
    assert "kafka_connect_worker_connector_count 1.0" in text
    rows = client.get("/flows/a/b/partitions").json()
    assert [(r["topic"], r["target_topic"], r["lag_records"]) for r in rows] == [("t", "a.t", 7)]
    # Another view's registries are its own: nothing is shared through a module global.
    other = TestClient(app_over(FakeRuntime())).get("/metrics").text
    assert "mm2_replication_lag_records{" not in other
    assert "mm2_heartbeat_count_total{" not in other


def test_a_standby_exports_no_state_lag_or_counters_of_a_flow_its_leader_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked: list[str] = []

    def leader_answers(url: str, me: str | None) -> str | None:
        asked.append(url)
        return None  # the leader answers its /health

    monkeypatch.setattr(root, "leader_answers", leader_answers)
    fake = FakeRuntime()
    fake.metrics.set_routes("a", "b", {"t": Route("t", "a.t", 1)})
    fake.metrics.update_lag("a", "b", {("t", 0): ("a.t", 7, 1.5)})
    client = TestClient(app_over(fake))
    assert 'mm2_flow_state{cause="",source="a",state="RUNNING",target="b"} 1.0' in (
        client.get("/metrics").text
    )
    fake.flows.leader_url = "http://node-1:8083"
    text = client.get("/metrics").text
    # The shipped alert MirrorMakerFlowNotCopying fired on a healthy standby's UNASSIGNED, and
    # lag summed over the nodes counted every partition twice.
    assert "mm2_flow_state{" not in text
    assert "mm2_replication_lag_records{" not in text
    assert "kafka_connect_connector_status{" not in text
    assert client.get("/health/flows").status_code == 200 and asked == ["http://node-1:8083"]
    assert client.get("/flows/a/b").json()["runs_on"] == "http://node-1:8083"
    # The leader killed, before the election moves its flows: they copy nowhere, and say so.
    monkeypatch.setattr(root, "leader_answers", lambda url, me: "ConnectError: refused")
    dead = client.get("/health/flows")
    assert dead.status_code == 503, dead.text
    assert "runs on http://node-1:8083, which does not answer" in dead.json()["causes"]["a->b"]


def test_a_leader_that_does_not_answer_is_named() -> None:
    why = root.leader_answers("http://127.0.0.1:9", None)  # the discard port: nothing listens
    assert why is not None and "Connect" in why, why


class RecordingTask(Task):
    """Records into whatever registries its context carries."""

    def start(self, config: Mapping[str, str], context: TaskContext) -> None:
        self.context = context

    def poll(self) -> float:
        self.context.liveness.heartbeat("a", "b", time.time())
        self.context.metrics.record_checkpoints("a", "b", "g", {("a.t", 0): 5.0})
        return 0.05

    def stop(self) -> None:
        pass


class RecordingConnector(Connector):
    task_class = RecordingTask

    def start(self, config: Mapping[str, str]) -> None:
        pass

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{}]


def test_a_herder_hands_its_tasks_the_registries_it_was_given() -> None:
    metrics, liveness = MetricsRegistry(), Liveness()
    herder = Herder(
        "a->b",
        {"R": {"connector.class": "RecordingConnector"}},
        {"RecordingConnector": RecordingConnector},
        worker_id="w",
        backoff=FAST,
        metrics=metrics,
        liveness=liveness,
    )
    herder.start()
    try:
        eventually(lambda: bool(liveness.snapshot()) and bool(metrics.checkpoint_snapshot()))
    finally:
        herder.stop()
    assert liveness.snapshot()[0].heartbeats >= 1
    assert metrics.checkpoint_snapshot()[0].group == "g"


PROPERTIES = """\
clusters = a, b
a.bootstrap.servers = localhost:1
b.bootstrap.servers = localhost:2
a->b.enabled = true
"""


class StillLag:
    """A lag reader that always reads 4 records behind on t-0."""

    def __init__(self, flow: object) -> None:
        self.closed = threading.Event()

    def read(self) -> LagReport:
        return LagReport("a->b", int(time.time() * 1000), (PartitionLag("t", 0, 9, 5, 4, 2.0),))

    def close(self) -> None:
        self.closed.set()


def test_a_mirror_records_lag_into_its_own_registry(tmp_path: Path) -> None:
    config = load_properties(parse_properties(PROPERTIES, "mm2.properties"))
    metrics = MetricsRegistry()
    mirror = MirrorMaker(
        config,
        {"RecordingConnector": RecordingConnector},
        ChangeStore(tmp_path / "rest-changes.json"),
        worker_id="w1",
        backoff=FAST,
        lag=StillLag,
        metrics=metrics,
    )
    assert mirror.metrics is metrics
    mirror.start()
    try:
        eventually(lambda: mirror.flows.view("a", "b").lag.records == 4)
    finally:
        mirror.stop()
    assert [(s.topic, s.lag_records) for s in metrics.snapshot()] == [("t", 4)]
    assert (
        MirrorMaker(
            config, {}, ChangeStore(tmp_path / "other.json"), worker_id="w2"
        ).metrics.snapshot()
        == []
    )


def test_every_groups_translation_in_one_call() -> None:
    fake = FakeRuntime()
    move = PartitionMove(
        TopicPartition("orders", 0),
        42,
        TopicPartition("a.orders", 0),
        40,
        exact=True,
        rereads_at_most=0,
    )
    fake.flows.plans = [FailoverPlan("failover", "app", "a", "b", "offset syncs", (move,), ())]
    client = TestClient(app_over(fake))
    body = client.get("/flows/a/b/groups/offsets").json()
    assert (body["source"], body["target"]) == ("a", "b")
    (group,) = body["groups"]
    assert group["group"] == "app" and group["partitions"][0]["target_offset"] == 40
    assert client.get("/flows/a/c/groups/offsets").status_code == 404
