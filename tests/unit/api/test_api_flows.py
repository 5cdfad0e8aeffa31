"""Flows over REST on fake plugins: add, pause, resume, stop, delete, and persistence."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from mm2.api.app import create_app
from tests.support.api import make_mirror, polls
from tests.support.waiting import eventually


def test_flow_lifecycle_and_persistence_across_restart(tmp_path: Path) -> None:
    mirror = make_mirror(tmp_path)
    mirror.start()
    client = TestClient(create_app(mirror))

    def backup_running() -> Any:
        flows = {(f["source"], f["target"]): f for f in client.get("/flows").json()}
        flow = flows[("primary", "backup")]
        return flow if flow["state"] == "RUNNING" else None

    try:
        # RUNNING once its tasks, on threads of their own, run too.
        flow = eventually(backup_running, timeout=30, what="primary->backup RUNNING")
        assert flow["enabled"] is True
        body = {
            "source": "primary",
            "target": "dr",
            "clusters": {"dr": {"bootstrap.servers": "localhost:3"}},
            "overrides": {"topics": "payments"},
        }
        added = client.post("/flows", json=body)
        assert added.status_code == 201 and added.headers["location"] == "/flows/primary/dr"
        eventually(
            lambda: polls("primary->dr|MirrorSourceConnector") > 0,
            timeout=10,
            what="the new flow's source task polling",
        )
        assert client.post("/flows", json=body).status_code == 409
        config = client.get("/connectors/primary.dr.MirrorSourceConnector/config").json()
        assert config["topics"] == "payments"
        assert client.put("/flows/primary/backup/pause").status_code == 202
        assert client.get("/flows/primary/backup").json()["state"] == "PAUSED"
        assert client.put("/flows/primary/dr/stop").status_code == 204
        assert client.delete("/flows/backup/primary").status_code == 204
    finally:
        mirror.stop()

    again = make_mirror(tmp_path)  # same file, same stored changes: a restart
    again.start()
    client = TestClient(create_app(again))
    try:
        flows = {(f["source"], f["target"]): f for f in client.get("/flows").json()}
        assert set(flows) == {("primary", "backup"), ("primary", "dr")}
        assert flows[("primary", "backup")]["state"] == "PAUSED"
        assert flows[("primary", "dr")]["state"] == "STOPPED"
        assert client.put("/flows/primary/dr/resume").status_code == 202
        eventually(
            lambda: client.get("/flows/primary/dr").json()["state"] == "RUNNING",
            timeout=30,
            what="primary->dr RUNNING, its tasks started",
        )
    finally:
        again.stop()


def test_bad_flows_are_refused_with_field_detail(tmp_path: Path) -> None:
    mirror = make_mirror(tmp_path)
    client = TestClient(create_app(mirror))
    unknown = client.post("/flows", json={"source": "primary", "target": "nowhere"})
    assert unknown.status_code == 400 and "clusters" in unknown.json()["errors"]
    same = client.post("/flows", json={"source": "primary", "target": "primary"})
    assert same.status_code == 400
    known = client.post(
        "/flows",
        json={"source": "primary", "target": "x", "clusters": {"primary": {"a": "b"}}},
    )
    assert known.status_code == 409
    typo = client.post("/flows", json={"source": "a", "target": "b", "overide": {}})
    assert typo.status_code == 400 and "overide" in typo.json()["errors"]
    bad_value = client.post(
        "/flows",
        json={
            "source": "primary",
            "target": "dr",
            "clusters": {"dr": {"bootstrap.servers": "h:1"}},
            "overrides": {"tasks.max": "lots"},
        },
    )
    assert bad_value.status_code == 400 and bad_value.json()["errors"]
    assert client.get("/health").status_code == 503  # never started
    assert not (tmp_path / "rest-changes.json").exists()  # nothing refused was stored
