"""REST API on fake plugins: Connect's shapes and codes, flows, persistence, secrets masked."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from mm2.runtime.mirror_maker import MirrorMaker
from tests.support.api import polls
from tests.support.waiting import eventually

SOURCE = "primary.backup.MirrorSourceConnector"


def test_root_health_and_plugins(client: TestClient) -> None:
    assert client.get("/").json()["version"]
    assert client.get("/health").json()["status"] == "healthy"
    classes = {p["class"] for p in client.get("/connector-plugins").json()}
    assert "org.apache.kafka.connect.mirror.MirrorSourceConnector" in classes


def test_connectors_are_named_per_flow_and_expand(client: TestClient) -> None:
    names = client.get("/connectors").json()
    assert SOURCE in names and "backup.primary.MirrorHeartbeatConnector" in names
    expanded = client.get("/connectors?expand=status&expand=info").json()
    assert expanded[SOURCE]["status"]["connector"]["state"] == "RUNNING"
    assert expanded[SOURCE]["info"]["type"] == "source"
    # the plain name works when one enabled flow has it
    assert client.get("/connectors/MirrorSourceConnector").json()["name"] == SOURCE


def test_unknown_names_are_404_in_connects_shape(client: TestClient) -> None:
    response = client.get("/connectors/nope.nope.MirrorSourceConnector/status")
    assert response.status_code == 404
    assert response.json()["error_code"] == 404 and "not found" in response.json()["message"]
    assert client.get("/flows/nope/backup").status_code == 404
    assert client.get("/no/such/route").json()["error_code"] == 404


def test_secrets_are_masked(client: TestClient) -> None:
    config = client.get(f"/connectors/{SOURCE}/config").json()
    assert config["source.cluster.sasl.jaas.config"] == "[hidden]"
    assert "secret-pw" not in client.get(f"/connectors/{SOURCE}/tasks").text
    assert "secret-pw" not in client.get("/connectors?expand=info").text


def test_pause_resume_stop_restart(client: TestClient) -> None:
    assert client.put(f"/connectors/{SOURCE}/pause").status_code == 202
    eventually(
        lambda: client.get(f"/connectors/{SOURCE}/status").json()["tasks"][0]["state"] == "PAUSED",
        timeout=10,
        what="the task PAUSED",
    )
    before = polls("primary->backup|MirrorSourceConnector")
    assert client.put(f"/connectors/{SOURCE}/resume").status_code == 202
    eventually(
        lambda: polls("primary->backup|MirrorSourceConnector") > before,
        timeout=10,
        what="the source task polling again",
    )
    assert client.put(f"/connectors/{SOURCE}/stop").status_code == 204
    assert client.get(f"/connectors/{SOURCE}/status").json()["connector"]["state"] == "STOPPED"
    assert client.post(f"/connectors/{SOURCE}/restart").status_code == 204
    assert client.put(f"/connectors/{SOURCE}/resume").status_code == 202
    restarted = client.post(f"/connectors/{SOURCE}/restart?includeTasks=true")
    assert restarted.status_code == 202 and restarted.json()["name"] == SOURCE
    assert client.post(f"/connectors/{SOURCE}/tasks/0/restart").status_code == 204
    assert client.post(f"/connectors/{SOURCE}/tasks/7/restart").status_code == 404
    assert client.get(f"/connectors/{SOURCE}/tasks/0/status").json()["id"] == 0


def test_put_and_patch_config_validate_and_keep_hidden_secrets(
    client: TestClient, mirror: MirrorMaker
) -> None:
    config = client.get(f"/connectors/{SOURCE}/config").json()
    bad = client.put(f"/connectors/{SOURCE}/config", json={**config, "tasks.max": "many"})
    assert bad.status_code == 400 and "tasks.max" in bad.json()["errors"]
    wrong_name = client.put(f"/connectors/{SOURCE}/config", json={**config, "name": "other"})
    assert wrong_name.status_code == 400
    ok = client.put(f"/connectors/{SOURCE}/config", json={**config, "topics": "payments"})
    assert ok.status_code == 200 and ok.json()["config"]["topics"] == "payments"
    stored = mirror.connectors.info(SOURCE).config["source.cluster.sasl.jaas.config"]
    assert "secret-pw" in stored  # "[hidden]" sent back did not overwrite the secret
    patched = client.patch(f"/connectors/{SOURCE}/config", json={"topics": None, "x.y": 3})
    assert patched.status_code == 200
    assert "topics" not in patched.json()["config"] and patched.json()["config"]["x.y"] == "3"
    assert client.put(f"/connectors/{SOURCE}/config", content=b"{not json").status_code == 400


def test_delete_and_recreate_connector(client: TestClient, mirror: MirrorMaker) -> None:
    masked = client.get(f"/connectors/{SOURCE}/config").json()
    config = mirror.connectors.info(SOURCE).config
    assert client.delete(f"/connectors/{SOURCE}").status_code == 204
    assert client.get(f"/connectors/{SOURCE}").status_code == 404
    refused = client.put(f"/connectors/{SOURCE}/config", json=masked)
    assert "source.cluster.sasl.jaas.config" in refused.json()["errors"]
    created = client.put(f"/connectors/{SOURCE}/config", json=config)
    assert created.status_code == 201 and created.headers["location"].endswith(SOURCE)
    assert client.post("/connectors", json={"name": SOURCE, "config": config}).status_code == 409


def test_validate_reports_errors_per_key(client: TestClient) -> None:
    body = {"source.cluster.alias": "a", "target.cluster.alias": "b", "tasks.max": "x"}
    result = client.put("/connector-plugins/MirrorSourceConnector/config/validate", json=body)
    assert result.status_code == 200 and result.json()["error_count"] == 1
    errors = {c["value"]["name"]: c["value"]["errors"] for c in result.json()["configs"]}
    assert errors["tasks.max"] and not errors["source.cluster.alias"]
    wrong = client.put(
        "/connector-plugins/MirrorSourceConnector/config/validate",
        json={**body, "connector.class": "MirrorHeartbeatConnector"},
    )
    assert wrong.status_code == 400
    assert client.put("/connector-plugins/Nope/config/validate", json={}).status_code == 404


def test_offsets_only_change_on_a_stopped_connector(client: TestClient, tmp_path: Path) -> None:
    assert client.get(f"/connectors/{SOURCE}/offsets").json() == {"offsets": []}
    entry = {
        "partition": {"cluster": "primary", "topic": "orders", "partition": 0},
        "offset": {"offset": 41},
    }
    refused = client.patch(f"/connectors/{SOURCE}/offsets", json={"offsets": [entry]})
    assert refused.status_code == 400 and "STOPPED" in refused.json()["message"]
    client.put(f"/connectors/{SOURCE}/stop")
    assert client.patch(f"/connectors/{SOURCE}/offsets", json={"offsets": [entry]}).is_success
    assert client.get(f"/connectors/{SOURCE}/offsets").json() == {"offsets": [entry]}
    unset = {**entry, "offset": {"offset": -1}}  # nothing copied: the same as no position
    assert client.patch(f"/connectors/{SOURCE}/offsets", json={"offsets": [unset]}).is_success
    assert client.get(f"/connectors/{SOURCE}/offsets").json() == {"offsets": []}
    assert client.patch(f"/connectors/{SOURCE}/offsets", json={"offsets": [entry]}).is_success
    bad = {**entry, "partition": {"cluster": "backup", "topic": "orders", "partition": 0}}
    assert client.patch(f"/connectors/{SOURCE}/offsets", json={"offsets": [bad]}).status_code == 400
    assert client.patch(f"/connectors/{SOURCE}/offsets", json={"offsets": []}).status_code == 400
    assert client.delete(f"/connectors/{SOURCE}/offsets").is_success
    assert client.get(f"/connectors/{SOURCE}/offsets").json() == {"offsets": []}


def test_metrics_are_prometheus_text(client: TestClient) -> None:
    text = client.get("/metrics").text
    assert 'kafka_connect_connector_status{connector="primary.backup.MirrorSourceConnector"' in text
    assert "process_cpu_seconds_total" in text or "python_info" in text


def test_a_flow_s_schema_sync_is_exported(mirror: MirrorMaker, client: TestClient) -> None:
    before = client.get("/metrics").text
    assert "# TYPE mm2_schema_ids_translated gauge" in before  # described before any pass
    mirror.metrics.record_schema_pass(
        "primary", "backup", id_mode="translated", registered=3, mappings=3
    )
    mirror.metrics.record_schema_pass(
        "primary", "backup", id_mode="translated", registered=1, mappings=2
    )
    text = client.get("/metrics").text
    assert 'mm2_schema_ids_translated{source="primary",target="backup"} 1.0' in text
    assert 'mm2_schema_versions_registered_total{source="primary",target="backup"} 4.0' in text
    assert 'mm2_schema_id_mappings_total{source="primary",target="backup"} 5.0' in text
