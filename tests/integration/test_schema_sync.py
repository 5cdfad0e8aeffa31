"""The schema sync between two real Apicurio Registry 3.0.9 servers, without Kafka.

Apicurio assigns its own IDs whatever a registration asks, so this is the translating path: the
sync must find that out by itself, copy every kind of schema in an order the target accepts
(a reference before the schema that imports it), rename the subjects that name a replicated
topic, copy compatibility levels and soft deletes, and map every source ID to a target ID that
the target answers with the same schema. A second pass over an unchanged source writes
nothing. The mappings go to a list instead of Kafka.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest

from mm2.policies.replication import DefaultReplicationPolicy
from mm2.records.schema_ids import SchemaIdMapping
from mm2.schemas.client import RegistryClient, Schema, SchemaReference
from mm2.schemas.settings import RegistrySettings
from mm2.schemas.subjects import SubjectFilter, SubjectNaming
from mm2.schemas.sync import SchemaSync
from tests.support.registry import ApicurioRegistry

pytestmark = [pytest.mark.integration]

SOURCE, TARGET = "primary", "backup"


def avro(name: str, *fields: tuple[str, object]) -> Schema:
    record = {
        "type": "record",
        "name": name,
        "namespace": "acme",
        "fields": [{"name": n, "type": t} for n, t in fields],
    }
    return Schema(json.dumps(record, separators=(",", ":")), "AVRO")


@pytest.fixture
def clients(
    registries: tuple[ApicurioRegistry, ApicurioRegistry],
) -> Iterator[tuple[RegistryClient, RegistryClient]]:
    """Clients of the source and target registries (no rate limit: a test waits for nobody)."""
    source, target = (
        RegistryClient(RegistrySettings(urls=(r.url,), requests_per_second=0)) for r in registries
    )
    with source, target:
        yield source, target


def test_a_pass_copies_every_kind_and_the_next_writes_nothing(
    clients: tuple[RegistryClient, RegistryClient],
) -> None:
    source, target = clients
    run = uuid.uuid4().hex[:6]  # the registries live for the module: names of this test's own
    orders, customers, payments, old = (f"{t}{run}" for t in ("orders", "customers", "pay", "old"))
    money = f"money{run}.proto"

    # Avro, two versions (the second adds an optional field); the first soft-deleted.
    order_v1 = avro("Order", ("id", "long"))
    order_v2 = avro("Order", ("id", "long"), ("note", ["null", "string"]))
    source.register(f"{orders}-value", order_v1)
    source.register(f"{orders}-value", order_v2)
    # JSON Schema; TopicRecordNameStrategy; a subject whose topic came from the target.
    customer = '{"type":"object","properties":{"name":{"type":"string"}}}'
    source.register(f"{customers}-value", Schema(customer, "JSON"))
    source.register(f"{orders}-acme.Refund", avro("Refund", ("order", "long")))
    source.register(f"{TARGET}.{orders}-value", avro("Echo", ("id", "long")))
    # Protobuf with a reference: the imported file in a subject of its own, registered first.
    proto_money = 'syntax = "proto3";\npackage acme;\nmessage Money { int64 cents = 1; }\n'
    proto_payment = (
        f'syntax = "proto3";\npackage acme;\nimport "{money}";\n'
        "message Payment { string id = 1; acme.Money amount = 2; }\n"
    )
    source.register(money, Schema(proto_money, "PROTOBUF"))
    source.register(
        f"{payments}-value",
        Schema(proto_payment, "PROTOBUF", (SchemaReference(money, money, 1),)),
    )
    source.set_compatibility("BACKWARD", f"{payments}-value")
    source.register(f"{old}-value", avro("Old", ("id", "long")))
    source.register(f"secret{run}-value", avro("Secret", ("id", "long")))
    source.delete_version(f"{orders}-value", 1)

    mappings: list[SchemaIdMapping] = []
    topics = {orders, customers, payments, old}
    naming = SubjectNaming(
        DefaultReplicationPolicy(),
        SOURCE,
        TARGET,
        replicated=lambda topic: True,
        is_topic=lambda topic: topic in topics,
    )
    sync = SchemaSync(
        source,
        target,
        source_alias=SOURCE,
        naming=naming,
        sink=mappings.append,
        subjects=SubjectFilter(rf".*{run}.*", rf"secret{run}-value"),
        flow="primary->backup",
    )
    first = sync.run_pass()

    assert sync.id_mode == "translated", sync.id_mode_reason  # Apicurio has no IMPORT mode
    assert "has no modes" in sync.id_mode_reason
    copied = {s for s in target.subjects(deleted=True) if run in s}
    assert copied == {
        f"primary.{orders}-value",
        f"primary.{customers}-value",
        f"primary.{orders}-acme.Refund",
        money,
        f"primary.{payments}-value",
        f"primary.{old}-value",
    }
    # Both Avro versions were copied, in order; the first is soft-deleted there too.
    renamed = f"primary.{orders}-value"
    assert target.versions(renamed, deleted=True) == [1, 2]
    assert target.versions(renamed) == [2]
    deleted_copy = target.version(renamed, 1)
    assert deleted_copy is not None and deleted_copy.content == order_v1
    latest = target.version(renamed, 2)
    assert latest is not None and latest.content == order_v2
    # The reference points at the copy of the imported subject.
    payment = target.version(f"primary.{payments}-value", 1)
    assert payment is not None
    assert payment.content.references == (SchemaReference(money, money, 1),)
    assert target.compatibility(f"primary.{payments}-value") == "BACKWARD"
    assert first.registered == 7 and first.deleted == 1 and first.configs >= 1

    # Every source ID is mapped, once, to an ID the target answers with the same schema.
    by_source = {m.source: m.target for m in mappings}
    assert any(s != t for s, t in by_source.items())  # numbered otherwise: translated indeed
    assert len(by_source) == len(mappings)
    assert all(m.cluster == SOURCE and not m.is_guid for m in mappings)
    for subject in (f"{orders}-value", money, f"{payments}-value", f"{customers}-value"):
        for version in source.versions(subject, deleted=True):
            found = source.version(subject, version)
            assert found is not None and found.id in by_source, (subject, version)
    for source_id, target_id in by_source.items():
        assert isinstance(source_id, int) and isinstance(target_id, int)
        on_source, on_target = source.schema_by_id(source_id), target.schema_by_id(target_id)
        assert on_source is not None and on_target is not None
        assert (on_target.schema, on_target.schema_type) == (
            on_source.schema,
            on_source.schema_type,
        ), source_id

    # Nothing changed: nothing written, to the registry or the sink.
    again = sync.run_pass()
    assert (again.writes, again.mappings) == (0, 0)

    # A subject deleted on the source after it was copied is deleted on the target.
    source.delete_subject(f"{old}-value")
    after = sync.run_pass()
    assert (after.deleted, after.registered, after.mappings) == (1, 0, 0)
    assert f"primary.{old}-value" not in target.subjects()
    assert f"primary.{old}-value" in target.subjects(deleted=True)

    # A new SchemaSync (a restarted task) finds everything in place on the target, and hands
    # every mapping once again (its offsets topic may be a new one), each as it was.
    handed: list[SchemaIdMapping] = []
    restarted = SchemaSync(
        source,
        target,
        source_alias=SOURCE,
        naming=naming,
        sink=handed.append,
        subjects=SubjectFilter(rf".*{run}.*", rf"secret{run}-value"),
        known={m.source: m.target for m in mappings},
    )
    assert restarted.run_pass().writes == 0
    assert {m.source: m.target for m in handed} == by_source


def test_a_new_version_and_changed_levels_reach_the_target_on_the_next_pass(
    clients: tuple[RegistryClient, RegistryClient],
) -> None:
    source, target = clients
    run = uuid.uuid4().hex[:6]
    subject = f"evolving{run}-value"
    mappings: list[SchemaIdMapping] = []
    naming = SubjectNaming(DefaultReplicationPolicy(), SOURCE, TARGET, replicated=lambda t: True)
    sync = SchemaSync(
        source,
        target,
        source_alias=SOURCE,
        naming=naming,
        sink=mappings.append,
        subjects=SubjectFilter(rf".*{run}.*"),
    )
    source.register(subject, avro("Evolving", ("id", "long")))
    sync.run_pass()
    assert target.versions(f"primary.{subject}") == [1]

    v2 = avro("Evolving", ("id", "long"), ("at", ["null", "long"]))
    registered = source.register(subject, v2)
    source.set_compatibility("FULL", subject)
    source.set_compatibility("FORWARD")  # the global level
    try:
        report = sync.run_pass()
        assert (report.registered, report.configs, report.mappings) == (1, 2, 1)
        assert target.compatibility(f"primary.{subject}") == "FULL"
        assert target.compatibility() == "FORWARD"
        copy = target.schema_by_id(int(mappings[-1].target))
        assert mappings[-1].source == registered.id and copy is not None
        assert copy.schema == v2.schema
    finally:
        source.set_compatibility("NONE")
        target.set_compatibility("NONE")
