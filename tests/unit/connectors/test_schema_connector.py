"""MirrorSchemaTask between two fake Confluent registries and a fake producer: the mappings go
to the flow's offsets topic placed by key, a failed delivery sends them again, and the ID mode
shows in the task's status note and the metrics. MirrorSchemaConnector: one task when both
registries are set and the flow is on."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from mm2.config import load_properties, parse_properties
from mm2.config.model import SCHEMA
from mm2.connect.spi import LeaderEpoch
from mm2.connectors.schema import MirrorSchemaConnector, MirrorSchemaTask
from mm2.errors import KafkaClientError
from mm2.records.schema_ids import (
    SchemaIdMapping,
    SchemaPasses,
    SchemaSubject,
    decode_schema_id_mapping,
    decode_schema_record,
)
from mm2.runtime.liveness import Liveness
from mm2.runtime.metrics import MetricsRegistry
from mm2.schemas.client import RegistryClient
from mm2.schemas.settings import RegistrySettings
from tests.unit.schemas.fake_registry import FakeRegistry

PROPERTIES = """clusters = a, b
a.bootstrap.servers = a:9092
b.bootstrap.servers = b:9092
a.schema.registry.url = http://a-registry:8081
b.schema.registry.url = http://b-registry:8081
a->b.enabled = true
"""


def config(extra: str = "") -> dict[str, str]:
    loaded = load_properties(parse_properties(PROPERTIES + extra, "m.properties"))
    return loaded.flow("a", "b").connector_config(SCHEMA)


@dataclass
class Context:
    metrics: MetricsRegistry = field(default_factory=MetricsRegistry)
    liveness: Liveness = field(default_factory=Liveness)
    flow: str = "a->b"
    connector: str = SCHEMA
    task_id: int = 0
    leader_epoch: LeaderEpoch | None = None


@dataclass
class FakeProducer:
    sent: list[tuple[str, bytes, bytes, int]] = field(default_factory=list)
    pending: list[Callable[[], None]] = field(default_factory=list)
    fail_next_flush: bool = False

    def send(
        self,
        topic: str,
        key: bytes,
        value: bytes,
        *,
        partition: int = 0,
        on_ack: Callable[[], None] | None = None,
        **_: object,
    ) -> None:
        self.sent.append((topic, key, value, partition))
        if on_ack is not None:
            self.pending.append(on_ack)

    def flush(self, timeout: float = 30.0) -> None:
        pending, self.pending = self.pending, []
        if self.fail_next_flush:
            self.fail_next_flush = False
            raise KafkaClientError("delivering to mm2-offsets.a.internal-3: timed out")
        for ack in pending:
            ack()

    def close(self, timeout: float = 2.0) -> None:
        pass


def client(fake: FakeRegistry, name: str) -> RegistryClient:
    settings = RegistrySettings(urls=(f"http://{name}:8081",), requests_per_second=0)
    return RegistryClient(settings, transport=fake.client_transport())


def started(
    source: FakeRegistry, target: FakeRegistry
) -> tuple[MirrorSchemaTask, FakeProducer, Context]:
    """A started task whose registries are fakes and whose producer is set (no Kafka)."""
    task, producer, context = MirrorSchemaTask(), FakeProducer(), Context()
    task.start(config(), context)
    task._source = client(source, "a-registry")
    task._target = client(target, "b-registry")
    task._producer = producer  # type: ignore[assignment]
    task._admin = FakeAdmin()  # type: ignore[assignment]
    task._topic_id = "id-1"
    return task, producer, context


class FakeAdmin:
    """The offsets topic's id, as DescribeTopics gives it (None: the topic is gone)."""

    def __init__(self) -> None:
        self.topic_id: str | None = "id-1"

    def topic_ids(self, topics: list[str]) -> dict[str, str]:
        return {} if self.topic_id is None else dict.fromkeys(topics, self.topic_id)


def mappings(sent: list[tuple[str, bytes, bytes, int]]) -> list[SchemaIdMapping]:
    found = [decode_schema_id_mapping(key, value) for _topic, key, value, _p in sent]
    return [m for m in found if m is not None]


def source_registry() -> FakeRegistry:
    source = FakeRegistry()
    source.add("orders-value", 7, '{"type":"record","name":"Order","fields":[]}')
    source.add("com.acme.Money", 9, '{"type":"record","name":"Money","fields":[]}')
    return source


def test_mappings_go_to_the_offsets_topic_placed_by_key_and_the_mode_shows() -> None:
    task, producer, context = started(source_registry(), FakeRegistry(mode=None))
    assert task.status_note() is None  # nothing decided before the first pass
    assert task.poll() == 1.0
    assert {(topic, partition) for topic, _k, _v, partition in producer.sent} == {
        ("mm2-offsets.a.internal", -1)
    }
    assert sorted((m.cluster, m.source) for m in mappings(producer.sent)) == [("a", 7), ("a", 9)]
    note = task.status_note()
    assert note is not None and note.startswith("schema IDs translated in flight: ")
    assert "has no modes" in note and "2 schema ID mapping(s) in mm2-offsets.a.internal" in note
    [snapshot] = context.metrics.schema_snapshot()
    assert (snapshot.id_mode, snapshot.versions_registered, snapshot.mappings_written) == (
        "translated",
        2,
        2,
    )
    records = [decode_schema_record(key, value) for _t, key, value, _p in producer.sent]
    assert sorted(str(r) for r in records if isinstance(r, SchemaSubject)) == sorted(
        str(SchemaSubject("a", s, frozenset({i})))
        for s, i in (("orders-value", 7), ("com.acme.Money", 9))
    )  # each subject's source IDs, after its mappings
    assert records[-1] == SchemaPasses("a", 1)  # the pass, last
    task.poll()
    # nothing new: only the pass written
    assert len(producer.sent) == 6 and decode_schema_record(*producer.sent[-1][1:3]) == (
        SchemaPasses("a", 2)
    )
    task.stop()


def test_a_failed_delivery_writes_the_mappings_again() -> None:
    target = FakeRegistry(mode="IMPORT")
    task, producer, _context = started(source_registry(), target)
    producer.fail_next_flush = True
    with pytest.raises(KafkaClientError):
        task.poll()
    task.poll()
    assert sorted(m.source for m in mappings(producer.sent)) == [7, 7, 9, 9]
    assert len(target.subjects["a.orders-value"]) == 1  # registered once, found the second time
    note = task.status_note()
    assert note is not None and note.startswith("schema IDs kept: ")
    task.stop()


@pytest.mark.parametrize(
    ("extra", "tasks"),
    [
        ("", 1),
        ("a->b.enabled = false\nemit.heartbeats.enabled = true\n", 0),
        ("sync.schemas.enabled = false\n", 0),
    ],
)
def test_the_connector_runs_one_task_when_wanted(extra: str, tasks: int) -> None:
    connector = MirrorSchemaConnector()
    connector.start(config(extra))
    configs = connector.task_configs(4)
    assert len(configs) == tasks
    assert all(c["task.index"] == "0" for c in configs)


def test_the_connector_is_a_plugin_of_the_runtime() -> None:
    from mm2.cli.runtime_main import PLUGINS

    assert PLUGINS[SCHEMA] is MirrorSchemaConnector


def test_an_offsets_topic_created_again_gets_the_whole_map_again() -> None:
    task, producer, _ = started(source_registry(), FakeRegistry(mode=None))
    admin = FakeAdmin()
    task._admin = admin  # type: ignore[assignment]
    task.poll()
    first = len(mappings(producer.sent))
    admin.topic_id = None  # lost: the pass waits, writing nothing
    with pytest.raises(KafkaClientError, match="is missing on b"):
        task.poll()
    admin.topic_id = "id-2"  # the planner created it again
    sent = len(producer.sent)
    task.poll()
    assert len(mappings(producer.sent[sent:])) == first == 2
    task.stop()
