"""A flow's typed settings: defaults in one place, Kafka's keys read once, worker keys included."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from mm2.config import Flow, load_properties, parse_properties
from mm2.config.settings import (
    CheckpointSettings,
    HeartbeatSettings,
    SourceSettings,
    WorkerSettings,
)

BASE = """clusters = a, b
a.bootstrap.servers = a:9092
b.bootstrap.servers = b:9092
a->b.enabled = true
"""


def flow(extra: str = "") -> Flow:
    return load_properties(parse_properties(BASE + extra, "mm2.properties")).flow("a", "b")


def test_defaults_are_the_dataclasses_own() -> None:
    settings = flow().settings
    assert settings.source == SourceSettings()
    assert settings.checkpoint == CheckpointSettings()
    assert settings.heartbeat == HeartbeatSettings()
    assert settings.worker == WorkerSettings(offset_storage_topic="mm2-offsets.a.internal")


def test_built_once() -> None:
    f = flow()
    assert f.settings is f.settings


@pytest.mark.parametrize(
    ("line", "part", "field", "value"),
    [
        ("tasks.max = 4", "source", "tasks_max", 4),
        ("a->b.offset.lag.max = 7", "source", "offset_lag_max", 7),
        ("refresh.topics.interval.seconds = 600", "source", "refresh_topics_interval_seconds", 600),
        ("sync.topic.configs.enabled = false", "source", "sync_topic_configs_interval_seconds",
         None),
        ("transaction.boundary.interval.ms = 250", "source", "transaction_boundary_interval_ms",
         250),
        ("skip.oversized.records = true", "source", "skip_oversized_records", True),
        ("heartbeats.replication.enabled = false", "source", "heartbeats_replication_enabled",
         False),
        ("offset-syncs.topic.location = target", "source", "offset_syncs_topic_location",
         "target"),
        ("exactly.once.support = REQUIRED", "source", "exactly_once_support", "required"),
        ("progress.group.id = g ", "source", "progress_group_id", "g"),
        ("sync.group.offsets.enabled = true", "checkpoint",
         "sync_group_offsets_interval_seconds", 1),
        ("emit.checkpoints.enabled = false", "checkpoint", "emit_checkpoints_interval_seconds",
         None),
        ("checkpoints.topic.replication.factor = 1", "checkpoint",
         "checkpoints_topic_replication_factor", 1),
        ("emit.heartbeats.interval.seconds = 9", "heartbeat", "emit_heartbeats_interval_seconds",
         9),
        ("heartbeats.topic.replication.factor = 1", "heartbeat",
         "heartbeats_topic_replication_factor", 1),
        ("offset.storage.topic = offsets", "worker", "offset_storage_topic", "offsets"),
        ("offset.storage.partitions = 5", "worker", "offset_storage_partitions", 5),
        ("offset.storage.replication.factor = 1", "worker", "offset_storage_replication_factor",
         1),
        ("b.offset.storage.replication.factor = 2", "worker",
         "offset_storage_replication_factor", 2),
        ("config.storage.replication.factor = 1", "worker", "config_storage_replication_factor",
         1),
        ("b.exactly.once.source.support = disabled", "worker", "exactly_once_source_support",
         "disabled"),
        ("exactly.once.source.support = preparing", "worker", "exactly_once_source_support",
         "preparing"),
    ],
)  # fmt: skip
def test_each_key_reaches_its_field(line: str, part: str, field: str, value: object) -> None:
    assert getattr(getattr(flow(line + "\n").settings, part), field) == value


def test_worker_key_precedence_flow_then_top_level_then_target() -> None:
    # Apache's workerConfig puts the top-level offset.storage.* over `<target>.*`; a flow-level
    # key is mm2's reading (Apache passes it to the connectors only).
    both = "offset.storage.replication.factor = 1\nb.offset.storage.replication.factor = 2\n"
    assert flow(both).settings.worker.offset_storage_replication_factor == 1
    flow_level = both + "a->b.offset.storage.replication.factor = 3\n"
    assert flow(flow_level).settings.worker.offset_storage_replication_factor == 3


def test_values_from_a_config_provider_are_resolved(tmp_path: Path) -> None:
    secrets = tmp_path / "mm2.secrets"
    secrets.write_text("tasks=6\n", encoding="utf-8")
    extra = (
        "config.providers = file\n"
        "config.providers.file.class = org.apache.kafka.common.config.provider.FileConfigProvider\n"
        f"tasks.max = ${{file:{secrets}:tasks}}\n"
    )
    assert flow(extra).settings.source.tasks_max == 6


def test_a_connector_seen_alone_reads_the_same_settings() -> None:
    f = flow("tasks.max = 3\noffset.storage.replication.factor = 1\n")
    alone = Flow.for_connector(f.connector_config())
    assert dataclasses.astuple(alone.settings) == dataclasses.astuple(f.settings)


def test_process_settings() -> None:
    config = load_properties(
        parse_properties(BASE + "mm2.configs.topic = cfg\nmm2.leader.session.timeout.ms = 5\n")
    )
    assert config.settings.mm2_configs_topic == "cfg"
    assert config.settings.mm2_leader_session_timeout_ms == 5
    assert config.settings.mm2_configs_cluster == ""
    assert config.settings.mm2_state_dir == "mm2-state"
