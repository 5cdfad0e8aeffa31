"""A flow's typed settings: defaults in one place, Kafka's keys read once, worker keys included."""

from __future__ import annotations

import dataclasses
import pickle
from pathlib import Path

import pytest

from mm2.config import Flow, load_properties, parse_properties
from mm2.config.copy_settings import exactly_once
from mm2.config.settings import (
    CheckpointSettings,
    HeartbeatSettings,
    SchemaSettings,
    SourceSettings,
    WorkerSettings,
)
from mm2.errors import ConfigError

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
        (
            "sync.topic.configs.enabled = false",
            "source",
            "sync_topic_configs_interval_seconds",
            None,
        ),
        (
            "transaction.boundary.interval.ms = 250",
            "source",
            "transaction_boundary_interval_ms",
            250,
        ),
        ("skip.oversized.records = true", "source", "skip_oversized_records", True),
        (
            "heartbeats.replication.enabled = false",
            "source",
            "heartbeats_replication_enabled",
            False,
        ),
        ("offset-syncs.topic.location = target", "source", "offset_syncs_topic_location", "target"),
        ("exactly.once.support = REQUIRED", "source", "exactly_once_support", "required"),
        ("progress.group.id = g ", "source", "progress_group_id", "g"),
        (
            "sync.group.offsets.enabled = true",
            "checkpoint",
            "sync_group_offsets_interval_seconds",
            1,
        ),
        (
            "emit.checkpoints.enabled = false",
            "checkpoint",
            "emit_checkpoints_interval_seconds",
            None,
        ),
        (
            "checkpoints.topic.replication.factor = 1",
            "checkpoint",
            "checkpoints_topic_replication_factor",
            1,
        ),
        (
            "emit.heartbeats.interval.seconds = 9",
            "heartbeat",
            "emit_heartbeats_interval_seconds",
            9,
        ),
        (
            "heartbeats.topic.replication.factor = 1",
            "heartbeat",
            "heartbeats_topic_replication_factor",
            1,
        ),
        ("offset.storage.topic = offsets", "worker", "offset_storage_topic", "offsets"),
        ("offset.storage.partitions = 5", "worker", "offset_storage_partitions", 5),
        ("offset.storage.replication.factor = 1", "worker", "offset_storage_replication_factor", 1),
        (
            "b.offset.storage.replication.factor = 2",
            "worker",
            "offset_storage_replication_factor",
            2,
        ),
        ("config.storage.replication.factor = 1", "worker", "config_storage_replication_factor", 1),
        (
            "b.exactly.once.source.support = disabled",
            "worker",
            "exactly_once_source_support",
            "disabled",
        ),
        (
            "exactly.once.source.support = preparing",
            "worker",
            "exactly_once_source_support",
            "preparing",
        ),
    ],
)
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


@pytest.mark.parametrize(
    ("extra", "on"),
    [
        ("", True),
        ("exactly.once.source.support = disabled", False),
        ("b.exactly.once.source.support = disabled", False),
        ("a->b.exactly.once.source.support = enabled", True),
    ],
)
def test_exactly_once_is_on_unless_apaches_key_disables_it(extra: str, on: bool) -> None:
    assert exactly_once(flow(extra).settings, read_committed=True) is on
    assert flow(extra).copy_settings.exactly_once is on


def test_exactly_once_required_needs_read_committed() -> None:
    with pytest.raises(ConfigError, match="read_committed"):
        exactly_once(flow("exactly.once.support = required").settings, read_committed=False)
    uncommitted = "exactly.once.support = required\na.consumer.isolation.level = read_uncommitted\n"
    with pytest.raises(ConfigError, match="read_committed"):
        _ = flow(uncommitted).copy_settings


def test_the_copy_settings_are_built_once_from_the_flows_settings_and_defaults() -> None:
    f = flow()
    copy = f.copy_settings
    assert copy is f.copy_settings
    assert (copy.flow, copy.source, copy.target) == ("a->b", "a", "b")
    source, schema = SourceSettings(), SchemaSettings()
    assert copy.tasks_max == source.tasks_max
    assert copy.transaction_boundary_interval_ms == source.transaction_boundary_interval_ms
    assert copy.offset_lag_max == source.offset_lag_max
    assert copy.skip_oversized_records == source.skip_oversized_records
    assert copy.schema_ids is False  # no registries named: nothing to rewrite
    assert (copy.schema_ids_keys, copy.schema_ids_values) == (schema.ids_keys, schema.ids_values)
    assert copy.schema_ids_wait_ms == schema.ids_wait_ms
    assert copy.key_subject_name_strategy == schema.key_strategy
    assert copy.value_subject_name_strategy == schema.value_strategy
    # librdkafka's keys, plain dicts: an executor unpickles them without mm2.config
    assert copy.source_consumer["isolation.level"] == "read_committed"
    assert copy.source_consumer["bootstrap.servers"] == "a:9092"
    assert copy.target_producer["bootstrap.servers"] == "b:9092"
    assert copy.source_admin["bootstrap.servers"] == "a:9092"
    clients = (copy.source_consumer, copy.target_producer, copy.source_admin)
    assert all(type(client) is dict for client in clients)
    assert pickle.loads(pickle.dumps(copy)) == copy


@pytest.mark.parametrize(
    ("line", "field", "value"),
    [
        ("tasks.max = 4", "tasks_max", 4),
        ("a->b.offset.lag.max = 7", "offset_lag_max", 7),
        ("transaction.boundary.interval.ms = 250", "transaction_boundary_interval_ms", 250),
        ("skip.oversized.records = true", "skip_oversized_records", True),
        ("exactly.once.source.support = disabled", "exactly_once", False),
        ("schema.ids.keys = false", "schema_ids_keys", False),
        ("schema.ids.values = false", "schema_ids_values", False),
        ("schema.ids.wait.ms = 5000", "schema_ids_wait_ms", 5000),
        (
            "key.subject.name.strategy = io.confluent.kafka.serializers.subject.RecordNameStrategy",
            "key_subject_name_strategy",
            "RecordNameStrategy",
        ),
        (
            "value.subject.name.strategy = TopicRecordNameStrategy",
            "value_subject_name_strategy",
            "TopicRecordNameStrategy",
        ),
        (
            "a.consumer.isolation.level = read_uncommitted",
            "source_consumer",
            {"isolation.level": "read_uncommitted"},
        ),
        ("b.producer.linger.ms = 20", "target_producer", {"linger.ms": "20"}),
    ],
)
def test_each_key_reaches_the_copy_settings(line: str, field: str, value: object) -> None:
    got = getattr(flow(line + "\n").copy_settings, field)
    if isinstance(value, dict):
        assert value.items() <= got.items()
    else:
        assert got == value


REGISTRIES = "a.schema.registry.url = http://a:8081\nb.schema.registry.url = http://b:8081\n"


def test_schema_ids_are_rewritten_while_the_flows_schemas_are_mirrored() -> None:
    assert flow(REGISTRIES).copy_settings.schema_ids is True
    assert flow("a.schema.registry.url = http://a:8081\n").copy_settings.schema_ids is False
    off = REGISTRIES + "sync.schemas.enabled = false\n"
    assert flow(off).copy_settings.schema_ids is False
