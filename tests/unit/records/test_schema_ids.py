"""The schema-ID map's records in the offsets topic: written and read back, and told apart."""

from __future__ import annotations

import pytest

from mm2.errors import RecordFormatError
from mm2.records.schema_ids import (
    SchemaIdMapping,
    SchemaPasses,
    SchemaSubject,
    decode_schema_id_mapping,
    decode_schema_record,
)


def test_an_id_mapping_round_trips() -> None:
    m = SchemaIdMapping("primary", 7, 1042)
    assert m.key() == b'["MirrorSchemaConnector",{"cluster":"primary","id":7}]'
    assert decode_schema_id_mapping(m.key(), m.value()) == m
    assert not m.is_guid


def test_a_guid_mapping_round_trips() -> None:
    m = SchemaIdMapping("primary", "0b2f-a", "77c1-b")
    assert m.is_guid
    assert decode_schema_id_mapping(m.key(), m.value()) == m


def test_positions_and_tombstones_are_not_mappings() -> None:
    key = b'["MirrorSourceConnector",{"cluster":"primary","partition":0,"topic":"t"}]'
    assert decode_schema_id_mapping(key, b'{"offset":4}') is None
    assert decode_schema_id_mapping(SchemaIdMapping("p", 1, 2).key(), None) is None


@pytest.mark.parametrize(
    "value", [b"{", b'{"target":"x"}', b'{"other":1}'], ids=["json", "kind", "field"]
)
def test_a_broken_mapping_names_the_cause(value: bytes) -> None:
    with pytest.raises(RecordFormatError, match="MirrorSchemaConnector"):
        decode_schema_id_mapping(SchemaIdMapping("p", 1, 2).key(), value)


def test_subjects_and_passes_round_trip_and_are_no_mappings() -> None:
    subject = SchemaSubject("primary", "orders-value", frozenset({7, 3}), frozenset({"0b2f-a"}))
    passes = SchemaPasses("primary", 12)
    assert subject.value() == b'{"ids":[3,7],"guids":["0b2f-a"]}'
    for record in (subject, passes):
        assert decode_schema_record(record.key(), record.value()) == record
        assert decode_schema_id_mapping(record.key(), record.value()) is None
    mapping = SchemaIdMapping("primary", 7, 1042)
    assert decode_schema_record(mapping.key(), mapping.value()) == mapping


@pytest.mark.parametrize("value", [b'{"ids":["7"]}', b'{"ids":[true]}', b"{}"])
def test_a_broken_subject_record_names_the_cause(value: bytes) -> None:
    with pytest.raises(RecordFormatError, match="MirrorSchemaConnector"):
        decode_schema_record(SchemaSubject("p", "s", frozenset()).key(), value)
