"""Apache MM2 users' dashboards and alerts find their series on /metrics, with true values.

The queries are data taken from Strimzi's examples (strimzi/strimzi-kafka-operator, commit
8541da1e, Aug 2026): packaging/examples/metrics/grafana-dashboards/strimzi-kafka-mirror-maker-2.json
(every panel's expression) and packaging/examples/metrics/prometheus-install/prometheus-rules/
prometheus-kafka-connect-rules.yaml (the Connect alerts, which match MirrorMaker 2 pods too).
Labels Prometheus adds when it scrapes (strimzi_io_kind, strimzi_io_cluster, namespace, pod,
kubernetes_pod_name) are the scrape config's, not the exporter's, and are left out.
"""

from __future__ import annotations

import math
import re
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from mm2.api.apache_metrics import jmx_value
from mm2.api.app import create_app
from mm2.config.values import ValueProblem, check_value
from mm2.copy.routes import Route
from mm2.copy.stats import CopyStats
from mm2.runtime.mirror_maker import MirrorMaker
from mm2.runtime.status import ConnectorStatus, TaskStatus
from tests.support.api import PROPERTIES, make_mirror

Sample = tuple[str, dict[str, str], float]

# (panel or alert, series, {label: regex it must match}); `=` filters as full-match regexes.
SERVED = [
    ("Total Number of Running Connectors", "kafka_connect_worker_connector_count", {}),
    ("Total record rate", "kafka_connect_mirror_mirrorsourceconnector_record_rate", {}),
    ("Record Age", "kafka_connect_mirror_mirrorsourceconnector_record_age_ms", {}),
    ("Record Age", "kafka_connect_mirror_mirrorsourceconnector_record_age_ms_avg", {}),
    ("Record Age", "kafka_connect_mirror_mirrorsourceconnector_record_age_ms_min", {}),
    ("Record Age", "kafka_connect_mirror_mirrorsourceconnector_record_age_ms_max", {}),
    ("Total Number of Running Tasks", "kafka_connect_worker_task_count", {}),
    ("Total byte rate", "kafka_connect_mirror_mirrorsourceconnector_byte_rate", {}),
    (
        "Replication Latency",
        "kafka_connect_mirror_mirrorsourceconnector_replication_latency_ms",
        {},
    ),
    (
        "Replication Latency",
        "kafka_connect_mirror_mirrorsourceconnector_replication_latency_ms_avg",
        {},
    ),
    (
        "Replication Latency",
        "kafka_connect_mirror_mirrorsourceconnector_replication_latency_ms_min",
        {},
    ),
    (
        "Replication Latency",
        "kafka_connect_mirror_mirrorsourceconnector_replication_latency_ms_max",
        {},
    ),
    (
        "Consumer Group Offset Sync Latency",
        "kafka_connect_mirror_mirrorcheckpointconnector_checkpoint_latency_ms",
        {},
    ),
    ("Assigned Connectors per Worker", "kafka_connect_coordinator_assigned_connectors", {}),
    ("Assigned Tasks per Worker", "kafka_connect_coordinator_assigned_tasks", {}),
    ("ConnectFailedConnector", "kafka_connect_connector_status", {"status": "failed"}),
    ("ConnectFailedTask", "kafka_connect_worker_connector_failed_task_count", {}),
    (
        "Consumer Lag",
        "kafka_consumer_fetch_manager_records_lag",
        {"clientid": "(?!consumer-mirrormaker2-).*"},
    ),
]
# Labels the panels sum by: each series above must carry them.
SUMMED_BY = {
    "Record Age": ("partition", "topic"),
    "Replication Latency": ("partition", "topic"),
    "Consumer Group Offset Sync Latency": ("source", "target", "topic", "partition", "group"),
    "Consumer Lag": ("topic", "partition"),
}
# Panels mm2 cannot fill with true values (docs/rest-api.md#apache-names says why); the test
# checks they stay empty rather than show a made-up figure.
EMPTY = [
    ("Incoming Bytes per Second", "kafka_consumer_incoming_byte_total"),
    ("Outgoing Bytes per Second", "kafka_producer_outgoing_byte_total"),
    ("Source Connector - Producer Available Buffer", "kafka_producer_buffer_available_bytes"),
    (
        "Source Connector - Average Offset Commit Time",
        "kafka_connect_connector_task_offset_commit_avg_time_ms",
    ),
    (
        "Source Connector - Connect Outstanding Messages Queue",
        "kafka_connect_source_task_source_record_active_count",
    ),
    ("Rebalancing", "kafka_connect_worker_rebalance_rebalancing"),
]


def samples(client: TestClient) -> list[Sample]:
    text = client.get("/metrics").text
    return [
        (s.name, s.labels, s.value)
        for family in text_string_to_metric_families(text)
        for s in family.samples
    ]


def matching(found: list[Sample], name: str, filters: dict[str, str]) -> list[Sample]:
    return [
        s
        for s in found
        if s[0] == name and all(re.fullmatch(v, s[1].get(k, "")) for k, v in filters.items())
    ]


def copy_some(mirror: MirrorMaker) -> None:
    """A committed batch and a checkpoint, as the copy tasks and checkpoint task record them."""
    now = int(time.time() * 1000)
    reg = mirror.metrics
    reg.set_routes("primary", "backup", {"orders": Route("orders", "primary.orders", 2)})
    reg.set_owners("primary", "backup", {("orders", 0): 0, ("orders", 1): 0})
    batch = CopyStats(
        "orders",
        0,
        "primary.orders",
        position=2,
        first=0,
        records=3,
        bytes=300,
        min_timestamp=now - 900,
        max_timestamp=now - 300,
        sum_timestamp=3 * now - 1800,
        finished_ms=now,
        age_min_ms=100,
        age_max_ms=700,
        age_sum_ms=1200,
    )
    reg.record_batch("primary", "backup", [batch])
    reg.record_checkpoints("primary", "backup", "app", {("primary.orders", 0): 250.0})


def test_every_dashboard_panel_and_alert_finds_its_series(
    mirror: MirrorMaker, client: TestClient
) -> None:
    copy_some(mirror)
    found = samples(client)
    missing = [(what, name) for what, name, filters in SERVED if not matching(found, name, {})]
    assert not missing
    for what, name, _ in SERVED:
        for label in SUMMED_BY.get(what, ()):
            assert all(label in s[1] for s in matching(found, name, {})), (what, name, label)
    for what, name in EMPTY:
        assert not matching(found, name, {}), what


def test_the_legacy_figures_are_the_batch_s(mirror: MirrorMaker, client: TestClient) -> None:
    copy_some(mirror)
    found = samples(client)
    tags = {"source": "primary", "target": "backup", "topic": "primary.orders", "partition": "0"}

    def value(attr: str) -> float:
        (s,) = matching(found, f"kafka_connect_mirror_mirrorsourceconnector_{attr}", tags)
        return s[2]

    assert value("record_count") == 3 and value("byte_count") == 300
    assert value("replication_latency_ms") == 300  # the newest record's
    assert value("replication_latency_ms_max") == 900
    assert value("replication_latency_ms_avg") == 600
    assert value("record_age_ms") == 100 and value("record_age_ms_avg") == 400
    # partition 1 copied nothing: Kafka's windowed stats are NaN then, counts 0
    idle = {**tags, "partition": "1"}
    (age,) = matching(found, "kafka_connect_mirror_mirrorsourceconnector_record_age_ms_max", idle)
    assert math.isnan(age[2])
    (lat,) = matching(
        found,
        "kafka_connect_mirror_mirrorcheckpointconnector_checkpoint_latency_ms",
        {"group": "app", "topic": "primary.orders", "partition": "0"},
    )
    assert lat[2] == 250
    # the default is Apache's: legacy names only
    assert not matching(found, "kafka_connect_plugins_record_count", {})


def test_consumer_lag_is_the_copy_task_s_last_fetch(
    mirror: MirrorMaker, client: TestClient
) -> None:
    copy_some(mirror)
    reg = mirror.metrics
    # partition 1: its fetch answer showed the source's end at 10 after offset 4 was copied
    behind = CopyStats("orders", 1, "primary.orders", position=4, first=4, records=1)
    behind.source_end, behind.finished_ms = 10, int(time.time() * 1000)
    reg.record_batch("primary", "backup", [behind])
    found = samples(client)
    lags = {
        (s[1]["clientid"], s[1]["topic"], s[1]["partition"]): s[2]
        for s in matching(found, "kafka_consumer_fetch_manager_records_lag", {})
    }
    client_id = '"primary->backup|MirrorSourceConnector-0|replication-consumer"'
    # partition 0 had caught up (no end beyond what it copied); the topic is the source's
    assert lags == {(client_id, "orders", "0"): 0.0, (client_id, "orders", "1"): 5.0}
    # a partition no copy task has here shows no consumer lag (no consumer has it)
    reg.set_owners("primary", "backup", {("orders", 0): 0})
    found = samples(client)
    assert [
        s[1]["partition"] for s in matching(found, "kafka_consumer_fetch_manager_records_lag", {})
    ] == ["0"]


def failed_statuses(mirror: MirrorMaker) -> list[tuple[str, ConnectorStatus]]:
    """Two connectors of primary->backup: the source one RUNNING with tasks 0 RUNNING and 1, 2
    FAILED; the heartbeat one FAILED itself, its task RUNNING."""
    source = ConnectorStatus(
        "primary.backup.MirrorSourceConnector",
        "RUNNING",
        "w1",
        (
            TaskStatus(0, "RUNNING", "w1"),
            TaskStatus(1, "FAILED", "w1", "boom"),
            TaskStatus(2, "FAILED", "w1", "boom"),
        ),
    )
    heartbeat = ConnectorStatus(
        "primary.backup.MirrorHeartbeatConnector",
        "FAILED",
        "w1",
        (TaskStatus(0, "RUNNING", "w1"),),
        "broken",
    )
    return [("primary->backup", source), ("primary->backup", heartbeat)]


def test_failed_connectors_and_tasks_show_as_failed_only(
    mirror: MirrorMaker, client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mirror.connectors, "statuses", lambda: failed_statuses(mirror))
    found = samples(client)
    failed = matching(found, "kafka_connect_connector_status", {"status": "failed"})
    assert [(s[1]["connector"], s[2]) for s in failed] == [
        ("primary.backup.MirrorHeartbeatConnector", 1.0)
    ]
    running = matching(found, "kafka_connect_connector_status", {"status": "running"})
    assert [s[1]["connector"] for s in running] == ["primary.backup.MirrorSourceConnector"]
    # ConnectFailedTask: sum(kafka_connect_worker_connector_failed_task_count) is the real count
    counts = {
        s[1]["connector"]: s[2]
        for s in matching(found, "kafka_connect_worker_connector_failed_task_count", {})
    }
    assert counts == {
        "primary.backup.MirrorSourceConnector": 2.0,
        "primary.backup.MirrorHeartbeatConnector": 0.0,
    }
    totals = matching(found, "kafka_connect_worker_connector_total_task_count", {})
    assert sorted(s[2] for s in totals) == [1.0, 3.0]
    tasks = matching(found, "kafka_connect_connector_task_status", {"status": "failed"})
    assert sorted(s[1]["task"] for s in tasks) == ["1", "2"]
    # mm2's own one-hot families keep their shape beside Apache's
    own = matching(found, "kafka_connect_connector_status", {"state": "FAILED"})
    assert {s[1]["connector"]: s[2] for s in own} == {
        "primary.backup.MirrorSourceConnector": 0.0,
        "primary.backup.MirrorHeartbeatConnector": 1.0,
    }
    assert matching(found, "kafka_connect_coordinator_assigned_tasks", {})[0][2] == 4


def test_new_names_when_the_flow_asks(tmp_path: Path) -> None:
    state = tmp_path
    mirror = make_mirror(
        state,
        PROPERTIES + f"mm2.state.dir = {state / 'state'}\nmetric.names.formats = new\n",
    )
    mirror.start()
    try:
        copy_some(mirror)
        found = samples(TestClient(create_app(mirror)))
    finally:
        mirror.stop()
    new = matching(
        found,
        "kafka_connect_plugins_record_count",
        {"connector": "primary.backup.MirrorSourceConnector", "task": "[0-9]+", "partition": "0"},
    )
    assert [s[2] for s in new] == [3.0]
    assert not matching(found, "kafka_connect_mirror_mirrorsourceconnector_record_count", {})
    # mm2's own names stay, whatever the formats
    assert matching(found, "kafka_connect_mirror_source_connector_record_count_total", {})


def test_jmx_quoting_as_kafka_s_sanitizer() -> None:
    assert jmx_value("primary.backup.MirrorSourceConnector") == (
        "primary.backup.MirrorSourceConnector"
    )
    assert jmx_value("a->b|MirrorSourceConnector-0|replication-consumer") == (
        '"a->b|MirrorSourceConnector-0|replication-consumer"'
    )
    assert jmx_value('x"y') == '"x\\"y"'


@pytest.mark.parametrize("value", ["legacy", "new", "legacy,new", " new , legacy "])
def test_metric_names_formats_takes_apache_s_values(value: str) -> None:
    check_value("metric.names.formats", value)


@pytest.mark.parametrize("value", ["", "old", "legacy,both"])
def test_metric_names_formats_refuses_others(value: str) -> None:
    with pytest.raises(ValueProblem):
        check_value("metric.names.formats", value)
