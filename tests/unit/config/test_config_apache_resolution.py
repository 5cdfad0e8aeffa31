"""mm2's connector and worker configs against Apache's MirrorMakerConfig (tests/unit/oracle):
the same raw mm2.properties map must give the same connectorBaseConfig and workerConfig, so
what `--print-config` shows for a connector is what Apache would hand it."""

from __future__ import annotations

import pytest

from mm2.config import load_properties
from mm2.config.properties import PropertiesFile
from mm2.config.resolve import (
    cluster_pairs,
    connector_base_config,
    parse_clusters,
    worker_config,
)
from tests.support.apache_oracle import ApacheOracle

CONNECTORS = ("MirrorSourceConnector", "MirrorCheckpointConnector", "MirrorHeartbeatConnector")
BASE = {
    "clusters": "a, b",
    "a.bootstrap.servers": "a:9092",
    "b.bootstrap.servers": "b:9092",
    "a->b.enabled": "true",
    "a->b.topics": "t.*",
    "tasks.max": "2",
    "replication.factor": "1",
}
# Connect worker keys (Apache's workerConfig takes the top-level ones, its connectorBaseConfig
# leaves them out), each at the top level, for the target cluster, and for the flow.
WORKER_CASES = {
    "offset.storage.replication.factor": {"offset.storage.replication.factor": "1"},
    "offset.storage.*": {
        "offset.storage.topic": "offsets",
        "offset.storage.partitions": "5",
        "offset.storage.replication.factor": "1",
    },
    "config.storage.* and status.storage.*": {
        "config.storage.replication.factor": "1",
        "status.storage.replication.factor": "1",
        "status.storage.partitions": "1",
    },
    "converters": {
        "key.converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
        "value.converter.schemas.enable": "false",
    },
    "other worker keys": {
        "offset.flush.interval.ms": "1000",
        "task.shutdown.graceful.timeout.ms": "1000",
        "worker.sync.timeout.ms": "1000",
        "group.id": "g",
    },
    "exactly.once.source.support": {"exactly.once.source.support": "enabled"},
    "per target cluster": {
        "b.offset.storage.replication.factor": "1",
        "b.exactly.once.source.support": "enabled",
        "b.offset.flush.interval.ms": "1000",
    },
    "per flow": {
        "a->b.offset.storage.replication.factor": "1",
        "a->b.exactly.once.source.support": "enabled",
    },
}


@pytest.mark.parametrize("case", sorted(WORKER_CASES))
@pytest.mark.parametrize("pair", [("a", "b"), ("b", "a")], ids=["a->b", "b->a"])
def test_connector_configs_leave_worker_keys_out_as_apache_does(
    apache: ApacheOracle, case: str, pair: tuple[str, str]
) -> None:
    raw = {**BASE, **WORKER_CASES[case]}
    java = apache.resolution(raw, *pair)
    for connector in CONNECTORS:
        ours = connector_base_config(raw, *pair, connector)
        assert ours == java["connectors"][connector], connector
    loaded = load_properties(PropertiesFile("mm2.properties", dict(raw))).flow(*pair)
    assert loaded.connectors == java["connectors"]  # what --print-config shows


@pytest.mark.parametrize("case", sorted(WORKER_CASES))
def test_worker_config_is_apaches(apache: ApacheOracle, case: str) -> None:
    raw = {**BASE, **WORKER_CASES[case]}
    java = apache.resolution(raw, "a", "b")["worker"]
    ours = worker_config(raw, "a", "b")
    if "exactly.once.source.support" in raw and "exactly.once.source.support" not in java:
        # Ours: a top-level exactly.once.source.support is read as the worker's too.
        assert ours.pop("exactly.once.source.support") == raw["exactly.once.source.support"]
    assert ours == java


def test_worker_keys_still_reach_the_settings() -> None:
    raw = {**BASE, **WORKER_CASES["offset.storage.*"], "exactly.once.source.support": "disabled"}
    flow = load_properties(PropertiesFile("mm2.properties", raw)).flow("a", "b")
    assert "offset.storage.replication.factor" not in flow.connectors["MirrorSourceConnector"]
    worker = flow.settings.worker
    assert worker.offset_storage_replication_factor == 1
    assert worker.offset_storage_topic == "offsets"
    assert worker.offset_storage_partitions == 5
    assert worker.exactly_once_source_support == "disabled"
    # The map a connector starts with carries them (the herder hands them over).
    started = flow.connector_config()
    assert started["offset.storage.replication.factor"] == "1"
    assert started["exactly.once.source.support"] == "disabled"


@pytest.mark.parametrize(
    "extra",
    [
        {},
        {"emit.heartbeats.enabled": "false"},
        {"emit.heartbeats.enabled": "false", "b->a.emit.heartbeats.enabled": "true"},
        {"emit.heartbeats.enabled": "FALSE", "b->a.enabled": "True"},
    ],
)
def test_cluster_pairs_are_apaches(apache: ApacheOracle, extra: dict[str, str]) -> None:
    raw = {**BASE, **extra}
    java = apache.resolution(raw, "a", "b")["pairs"]
    ours = cluster_pairs(raw, parse_clusters(raw["clusters"]))
    assert sorted(f"{s}->{t}" for s, t in ours) == sorted(java)
