"""The REST API of a running connect-mirror-maker on real brokers, driven as an operator would.

One mirror process serves every step (module fixture); the steps run in file order.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from tests.support.kafka import Cluster, count, read_topic
from tests.support.mirror import MirrorProcess, free_port, write_properties
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration
SOURCE = "primary.backup.MirrorSourceConnector"


@dataclass
class Setup:
    props: Path
    api: httpx.Client
    primary: str
    backup: str
    topic: str
    extra_topic: str
    mirror: MirrorProcess
    produced: int = 0

    def produce(self, topic: str, n: int) -> None:
        producer = Producer({"bootstrap.servers": self.primary})
        for i in range(n):
            producer.produce(topic, f"{topic}-{time.monotonic_ns()}-{i}".encode(), partition=0)
        producer.flush(30)

    def wait(self, check: Any, what: str, timeout: float = 120) -> None:
        eventually(check, timeout=timeout, what=what, log=self.mirror.log)

    def start(self) -> None:
        self.mirror = MirrorProcess(self.props)
        self.wait(lambda: _healthy(self.api), "REST health")


def _healthy(api: httpx.Client) -> bool:
    try:
        return api.get("/health").status_code == 200
    except httpx.TransportError:
        return False


def _make_topic(bootstrap: str, name: str) -> str:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, 1, 1)])[name].result(30)
    return name


@pytest.fixture(scope="module")
def setup(
    primary: Cluster, backup: Cluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Setup]:
    prefix = f"rest-{uuid.uuid4().hex[:8]}"
    port = free_port()
    props = write_properties(
        tmp_path_factory.mktemp("rest"),
        primary.bootstrap_servers,
        backup.bootstrap_servers,
        f"{prefix}-a",
        f"listeners = http://127.0.0.1:{port}\ntasks.max = 1\n",
    )
    api = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=120)
    s = Setup(
        props,
        api,
        primary.bootstrap_servers,
        backup.bootstrap_servers,
        _make_topic(primary.bootstrap_servers, f"{prefix}-a"),
        _make_topic(primary.bootstrap_servers, f"{prefix}-b"),
        MirrorProcess.__new__(MirrorProcess),
    )
    s.start()
    yield s
    s.mirror.stop()
    api.close()


def remote(s: Setup) -> int:
    return count(s.backup, f"primary.{s.topic}")


def test_mirrors_and_lists_flows_and_connectors(setup: Setup) -> None:
    s = setup
    s.produce(s.topic, 100)
    s.wait(lambda: remote(s) == 100, "first 100 records")
    names = s.api.get("/connectors").json()
    assert SOURCE in names
    s.wait(
        lambda: s.api.get("/flows/primary/backup").json()["state"] == "RUNNING", "the flow RUNNING"
    )
    s.wait(
        lambda: s.api.get("/flows/primary/backup").json()["lag"]["records_copied"] >= 100,
        "copied count in the flow's lag summary",
    )
    # The Connect view lists the copy tasks (tasks.max = 1: one), each with its partitions.
    tasks = s.api.get(f"/connectors/{SOURCE}/status").json()["tasks"]
    assert [t["id"] for t in tasks] == [0] and f"{s.topic}-0" in tasks[0]["partitions"], tasks
    one = s.api.get(f"/connectors/{SOURCE}/tasks/0/status").json()
    assert one["state"] == "RUNNING" and one["partitions"] == tasks[0]["partitions"], one
    assert s.api.get(f"/connectors/{SOURCE}/tasks/1/status").status_code == 404


def test_pause_stops_copying_and_resume_loses_nothing(setup: Setup) -> None:
    s = setup
    assert s.api.put("/flows/primary/backup/pause").status_code == 202
    s.wait(
        lambda: all(
            t["state"] == "PAUSED"
            for t in s.api.get(f"/connectors/{SOURCE}/status").json()["tasks"]
        ),
        "source task paused",
    )
    s.produce(s.topic, 50)
    time.sleep(3)  # a dozen trigger intervals: a running pipeline would have copied by now
    assert remote(s) == 100
    assert s.api.put("/flows/primary/backup/resume").status_code == 202
    s.wait(lambda: remote(s) == 150, "records produced while paused")
    source = [r[2] for r in read_topic(s.primary, s.topic)[0]]
    target = [r[2] for r in read_topic(s.backup, f"primary.{s.topic}")[0]]
    assert target == source


def test_flow_added_by_post_mirrors(setup: Setup) -> None:
    s = setup
    body = {
        "source": "primary2",
        "target": "backup",
        "clusters": {"primary2": {"bootstrap.servers": s.primary}},
        "overrides": {
            "topics": s.extra_topic,
            "replication.factor": "1",
            "offset-syncs.topic.replication.factor": "1",
        },
    }
    added = s.api.post("/flows", json=body)
    assert added.status_code == 201, added.text
    s.produce(s.extra_topic, 20)
    s.wait(lambda: count(s.backup, f"primary2.{s.extra_topic}") == 20, "added flow's records")
    assert "primary2.backup.MirrorSourceConnector" in s.api.get("/connectors").json()


def test_restart_connector_with_tasks(setup: Setup) -> None:
    s = setup
    restarted = s.api.post(f"/connectors/{SOURCE}/restart?includeTasks=true")
    assert restarted.status_code == 202 and restarted.json()["name"] == SOURCE
    s.produce(s.topic, 10)
    s.wait(lambda: remote(s) == 160, "records after the restart")


def _offset(s: Setup) -> int | None:
    for entry in s.api.get(f"/connectors/{SOURCE}/offsets").json()["offsets"]:
        if entry["partition"] == {"cluster": "primary", "topic": s.topic, "partition": 0}:
            return int(entry["offset"]["offset"])
    return None


def test_offsets_read_altered_and_reset_on_a_stopped_connector(setup: Setup) -> None:
    s = setup
    s.wait(lambda: _offset(s) == 159, "committed offset 159 (the last of 160 records)")
    patch = {
        "offsets": [
            {
                "partition": {"cluster": "primary", "topic": s.topic, "partition": 0},
                "offset": {"offset": 109},
            }
        ]
    }
    assert s.api.patch(f"/connectors/{SOURCE}/offsets", json=patch).status_code == 400
    assert s.api.put(f"/connectors/{SOURCE}/stop").status_code == 204
    assert s.api.get(f"/connectors/{SOURCE}/status").json()["connector"]["state"] == "STOPPED"
    assert _offset(s) == 159
    assert s.api.patch(f"/connectors/{SOURCE}/offsets", json=patch).status_code == 200
    assert _offset(s) == 109
    assert s.api.put(f"/connectors/{SOURCE}/resume").status_code == 202
    s.wait(lambda: remote(s) == 210, "the 50 records after offset 109 copied again")
    s.wait(lambda: _offset(s) == 159, "committed offset back at 159")
    assert s.api.put(f"/connectors/{SOURCE}/stop").status_code == 204
    assert s.api.delete(f"/connectors/{SOURCE}/offsets").status_code == 200
    assert _offset(s) is None
    assert s.api.put(f"/connectors/{SOURCE}/resume").status_code == 202
    s.wait(lambda: remote(s) == 370, "all 160 records copied again after the reset")


def test_metrics_expose_mm2_figures_and_lag(setup: Setup) -> None:
    text = setup.api.get("/metrics").text
    labels = f'partition="0",source="primary",target="backup",topic="primary.{setup.topic}"'
    assert f"kafka_connect_mirror_source_connector_record_count_total{{{labels}}}" in text
    assert f"mm2_replication_lag_records{{{labels}}}" in text
    assert "kafka_connect_mirror_source_connector_replication_latency_ms_max{" in text
    assert f'kafka_connect_connector_status{{connector="{SOURCE}"' in text


def test_changes_survive_a_restart(setup: Setup) -> None:
    s = setup
    assert s.api.put("/flows/primary2/backup/pause").status_code == 202
    assert s.mirror.stop() == 0
    s.start()
    flows = {(f["source"], f["target"]): f for f in s.api.get("/flows").json()}
    assert flows[("primary2", "backup")]["state"] == "PAUSED"
    # Just started: not elected yet (UNASSIGNED), its tasks starting (DEGRADED), or RUNNING.
    assert flows[("primary", "backup")]["state"] in ("RUNNING", "UNASSIGNED", "DEGRADED")
    s.produce(s.extra_topic, 5)
    assert s.api.put("/flows/primary2/backup/resume").status_code == 202
    s.wait(lambda: count(s.backup, f"primary2.{s.extra_topic}") == 25, "resumed added flow")
    assert s.api.delete("/flows/primary2/backup").status_code == 204
    assert s.api.get("/flows/primary2/backup").status_code == 404
