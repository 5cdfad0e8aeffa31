"""SchemaSync against a target in IMPORT mode (a fake Confluent registry: none that keeps IDs
installs here), the switch to translation when IDs are not kept, and what the sync hands its
sink. The translating path against real registries is tests/integration/test_schema_sync.py."""

from __future__ import annotations

import logging

import pytest

from mm2.policies.replication import DefaultReplicationPolicy
from mm2.records.schema_ids import SchemaIdMapping, SchemaSubject
from mm2.schemas.client import RegistryClient
from mm2.schemas.settings import RegistrySettings
from mm2.schemas.subjects import SubjectFilter, SubjectNaming
from mm2.schemas.sync import MappingSink, SchemaSync
from tests.unit.schemas.fake_registry import FakeRegistry

COMMON = '{"type":"record","name":"Money","fields":[{"name":"cents","type":"long"}]}'
ORDER_V1 = '{"type":"record","name":"Order","fields":[{"name":"id","type":"long"}]}'
ORDER_V2 = (
    '{"type":"record","name":"Order","fields":[{"name":"id","type":"long"},'
    '{"name":"total","type":"Money"}]}'
)


def source_registry() -> FakeRegistry:
    source = FakeRegistry()
    source.add("com.acme.Money", 5, COMMON)
    source.add("orders-value", 11, ORDER_V1)
    refs = [{"name": "com.acme.Money", "subject": "com.acme.Money", "version": 1}]
    source.add("orders-value", 12, ORDER_V2, references=refs)
    source.levels["orders-value"] = "FULL"
    return source


def sync_between(
    source: FakeRegistry, target: FakeRegistry, sink: MappingSink, **kwargs: object
) -> SchemaSync:
    def client(fake: FakeRegistry, name: str) -> RegistryClient:
        settings = RegistrySettings(urls=(f"http://{name}:8081",), requests_per_second=0)
        return RegistryClient(settings, transport=fake.client_transport())

    naming = SubjectNaming(
        DefaultReplicationPolicy(), "primary", "backup", replicated=lambda t: True
    )
    return SchemaSync(
        client(source, "source"),
        client(target, "target"),
        source_alias="primary",
        naming=naming,
        subjects=SubjectFilter(),
        sink=sink,
        flow="primary->backup",
        **kwargs,  # type: ignore[arg-type]
    )


def test_a_target_in_import_mode_keeps_ids_and_versions(caplog: pytest.LogCaptureFixture) -> None:
    source, target = source_registry(), FakeRegistry(mode="IMPORT")
    mappings: list[SchemaIdMapping] = []
    sync = sync_between(source, target, mappings.append)
    with caplog.at_level(logging.INFO, logger="mm2.schemas.sync"):
        report = sync.run_pass()
    assert sync.id_mode == "kept" and "IMPORT mode" in sync.id_mode_reason
    assert "primary->backup: keeps schema IDs" in caplog.text
    assert {v.id for v in target.subjects["primary.orders-value"].values()} == {11, 12}
    assert sorted(target.subjects["primary.orders-value"]) == [1, 2]
    assert target.subjects["com.acme.Money"][1].id == 5  # a reference, registered first
    assert target.subjects["primary.orders-value"][2].schema["references"] == [
        {"name": "com.acme.Money", "subject": "com.acme.Money", "version": 1}
    ]
    assert target.levels["primary.orders-value"] == "FULL"
    assert (report.registered, report.configs) == (3, 1)
    # Identity mappings, one per ID: the copy side copies a record once its ID is mapped.
    assert sorted((m.source, m.target) for m in mappings) == [(5, 5), (11, 11), (12, 12)]

    writes = list(target.writes)
    again = sync.run_pass()
    assert (again.writes, again.mappings, target.writes) == (0, 0, writes)


def test_a_target_that_answers_other_ids_switches_the_flow_to_translation(
    caplog: pytest.LogCaptureFixture,
) -> None:
    source, target = source_registry(), FakeRegistry(mode="IMPORT", ignores_ids=True)
    mappings: list[SchemaIdMapping] = []
    sync = sync_between(source, target, mappings.append)
    with caplog.at_level(logging.INFO, logger="mm2.schemas.sync"):
        sync.run_pass()
        sync.run_pass()
    assert sync.id_mode == "translated"
    assert sync.id_mode_reason == "source ID 5 is 1000 on the target"
    switches = [r for r in caplog.records if "now translates" in r.getMessage()]
    assert len(switches) == 1 and switches[0].levelno == logging.WARNING
    assert sorted((m.source, m.target) for m in mappings) == [(5, 1000), (11, 1001), (12, 1002)]


def test_a_target_in_readwrite_mode_translates_from_the_start() -> None:
    source, target = source_registry(), FakeRegistry(mode="READWRITE")
    mappings: list[SchemaIdMapping] = []
    sync = sync_between(source, target, mappings.append)
    sync.run_pass()
    assert sync.id_mode == "translated" and "READWRITE mode, not IMPORT" in sync.id_mode_reason
    assert len(mappings) == 3 and all(m.source != m.target for m in mappings)


def test_a_new_sync_hands_every_mapping_once_known_or_not() -> None:
    # its task restarted: the offsets topic the known ones were read from may be a new one
    source, target = source_registry(), FakeRegistry(mode="IMPORT")
    mappings: list[SchemaIdMapping] = []
    # 99: a version the source no longer shows, mapped before: handed again too
    sync = sync_between(source, target, mappings.append, known={5: 5, 11: 11, 99: 99})
    sync.run_pass()
    assert sorted((m.source, m.target) for m in mappings) == [(5, 5), (11, 11), (12, 12), (99, 99)]
    mappings.clear()
    sync.run_pass()
    assert mappings == []


def test_a_mapping_the_sink_refused_is_handed_again_on_the_next_pass() -> None:
    source, target = source_registry(), FakeRegistry(mode="IMPORT")
    taken: list[SchemaIdMapping] = []

    def sink(mapping: SchemaIdMapping) -> None:
        if not taken and mapping.source == 5:
            taken.append(SchemaIdMapping("failed", 0, 0))
            raise OSError("the offsets topic is down")
        taken.append(mapping)

    sync = sync_between(source, target, sink)
    with pytest.raises(OSError, match="the offsets topic is down"):
        sync.run_pass()
    sync.run_pass()
    assert sorted(m.source for m in taken[1:]) == [5, 11, 12]
    assert len(target.subjects["com.acme.Money"]) == 1  # found again, not registered twice


def test_a_version_the_target_refuses_as_incompatible_is_registered_as_the_source_holds_it() -> (
    None
):
    source, target = source_registry(), FakeRegistry(mode="READWRITE", strict=True)
    target.levels["primary.orders-value"] = "FORWARD"
    sync_between(source, target, lambda _m: None).run_pass()
    assert sorted(target.subjects["primary.orders-value"]) == [1, 2]
    assert target.levels["primary.orders-value"] == "FULL"  # the source's, copied after


def test_compatibility_none_left_by_a_crash_mid_registration_is_removed() -> None:
    source, target = source_registry(), FakeRegistry(mode="IMPORT")
    source.add("payments-value", 21, ORDER_V1)  # no level of its own on the source
    target.levels["primary.payments-value"] = "NONE"  # set for one registration, never put back
    target.levels["primary.orders-value"] = "NONE"
    sync_between(source, target, lambda mapping: None).run_pass()
    assert "primary.payments-value" not in target.levels  # the global level applies again
    assert target.levels["primary.orders-value"] == "FULL"  # the source's own level


def test_each_subjects_source_ids_are_described_once_all_its_versions_are_placed() -> None:
    source, target = source_registry(), FakeRegistry(mode="IMPORT")
    described: list[SchemaSubject] = []
    sync = sync_between(source, target, lambda mapping: None, described=described.append)
    sync.run_pass()
    assert sorted((d.subject, sorted(d.ids)) for d in described) == [
        ("com.acme.Money", [5]),
        ("orders-value", [11, 12]),
    ]
    described.clear()
    sync.run_pass()
    assert described == []  # nothing changed
    source.add("orders-value", 13, ORDER_V1.replace("Order", "Order3"))
    sync.run_pass()
    assert [(d.subject, sorted(d.ids)) for d in described] == [("orders-value", [11, 12, 13])]
