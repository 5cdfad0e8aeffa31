"""Schema IDs rewritten in flight (mm2.copy.schema_ids): the 4 bytes of the payload prefix and
the 16 of a schema-ID header change, nothing else does; an ID with no target yet is Missing."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mm2.copy.schema_ids import (
    KEY_SCHEMA_ID_HEADER,
    VALUE_SCHEMA_ID_HEADER,
    Headers,
    HeaderValue,
    Missing,
    SchemaIdRewriter,
)
from mm2.errors import RecordFormatError
from mm2.records.schema_ids import SchemaIdMapping, SchemaSubject

SOURCE_GUID = uuid.UUID("0b2f5c1e-7a41-4c7e-9d8e-3f1a2b4c5d6e")
TARGET_GUID = uuid.UUID("77c1d2e3-f405-4617-8829-3a4b5c6d7e8f")
IDS = {7: 1042, 8: 1043}


def framed(schema_id: int, rest: bytes = b"") -> bytes:
    return b"\x00" + schema_id.to_bytes(4, "big") + rest


def rewriter(*, prefixed_keys: bool = True, prefixed_values: bool = True) -> SchemaIdRewriter:
    guids = {str(SOURCE_GUID): str(TARGET_GUID)}
    return SchemaIdRewriter(
        IDS, guids, prefixed_keys=prefixed_keys, prefixed_values=prefixed_values
    )


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (None, None),
        (b"order-1", b'{"json": true}'),
        (b"", b""),
        (b"\x00\x00\x00\x07", b"\x00\x00"),  # a 0x00 first byte, but shorter than the prefix
        (b"\x01" + framed(7)[1:], b"\x02" + framed(7)[1:]),
    ],
    ids=["none", "text", "empty", "short", "other-magic"],
)
def test_a_record_that_names_no_schema_is_copied_as_it_is(
    key: bytes | None, value: bytes | None
) -> None:
    assert rewriter().rewrite(key, value, None) is None
    assert rewriter().rewrite(key, value, [("traceparent", b"00-ab")]) is None


def test_the_prefix_id_is_replaced_and_protobuf_indexes_and_data_stay() -> None:
    rest = b"\x02\x04\x00" + b"\x0a\x03abc"  # message indexes [1, 2], then the data
    assert rewriter().rewrite(b"k", framed(7, rest), None) == (b"k", framed(1042, rest), None)


def test_keys_and_values_are_rewritten_each_by_its_own_id() -> None:
    headers: Headers = [("a", b"1")]
    out = rewriter().rewrite(framed(8, b"K"), framed(7, b"V"), headers)
    assert out == (framed(1043, b"K"), framed(1042, b"V"), headers)
    assert rewriter().rewrite(framed(8, b"K"), b"plain", None) == (
        framed(1043, b"K"),
        b"plain",
        None,
    )


def test_an_id_not_mapped_yet_is_missing_never_copied_as_it_is() -> None:
    missing = rewriter().rewrite(b"k", framed(99, b"data"), None)
    assert missing == Missing("value", 99, "prefix")
    assert str(missing) == "the value's schema ID 99 (payload prefix) has no target ID yet"
    assert rewriter().rewrite(framed(98), framed(7), None) == Missing("key", 98, "prefix")


def test_a_key_that_only_looks_framed_is_left_alone_when_keys_carry_no_prefix() -> None:
    long_key = (42).to_bytes(8, "big")  # Kafka's LongSerializer: 0x00 first, ID 0 after it
    assert rewriter().rewrite(long_key, None, None) == Missing("key", 0, "prefix")
    only_values = rewriter(prefixed_keys=False)
    assert only_values.rewrite(long_key, framed(7), None) == (long_key, framed(1042), None)
    assert rewriter(prefixed_values=False).rewrite(None, framed(99), None) is None


def test_a_guid_header_is_rewritten_in_place_and_the_payload_left_alone() -> None:
    indexes = b"\x02"
    headers: list[tuple[str, HeaderValue]] = [
        ("traceparent", b"00-ab"),
        (VALUE_SCHEMA_ID_HEADER, b"\x01" + SOURCE_GUID.bytes + indexes),
        ("tenant", None),
    ]
    # Avro data may well start with 0x00: with the header there, it is no prefix.
    value = framed(99, b"avro")
    out = rewriter().rewrite(b"k", value, headers)
    assert out == (
        b"k",
        value,
        [
            ("traceparent", b"00-ab"),
            (VALUE_SCHEMA_ID_HEADER, b"\x01" + TARGET_GUID.bytes + indexes),
            ("tenant", None),
        ],
    )
    assert headers[1] == (VALUE_SCHEMA_ID_HEADER, b"\x01" + SOURCE_GUID.bytes + indexes)


def test_a_header_for_one_field_and_a_prefix_for_the_other() -> None:
    headers: Headers = [(KEY_SCHEMA_ID_HEADER, b"\x01" + SOURCE_GUID.bytes)]
    out = rewriter().rewrite(b"\x00key", framed(7, b"v"), headers)
    assert out == (
        b"\x00key",
        framed(1042, b"v"),
        [(KEY_SCHEMA_ID_HEADER, b"\x01" + TARGET_GUID.bytes)],
    )


def test_beside_a_schema_header_the_other_fields_prefix_is_still_read() -> None:
    key_header: Headers = [(KEY_SCHEMA_ID_HEADER, b"\x01" + SOURCE_GUID.bytes)]
    value_header: Headers = [(VALUE_SCHEMA_ID_HEADER, b"\x01" + SOURCE_GUID.bytes)]
    assert rewriter().rewrite(None, framed(99), key_header) == Missing("value", 99, "prefix")
    assert rewriter().rewrite(framed(98), None, value_header) == Missing("key", 98, "prefix")
    new_header = [(VALUE_SCHEMA_ID_HEADER, b"\x01" + TARGET_GUID.bytes)]
    assert rewriter().rewrite(framed(8), None, value_header) == (framed(1043), None, new_header)
    new_header = [(KEY_SCHEMA_ID_HEADER, b"\x01" + TARGET_GUID.bytes)]
    assert rewriter().rewrite(None, b"\x00ab", key_header) == (None, b"\x00ab", new_header)


def test_an_id_in_a_header_is_rewritten_like_a_prefix() -> None:
    headers: Headers = {VALUE_SCHEMA_ID_HEADER: framed(8, b"\x00")}  # produce() takes a dict too
    out = rewriter().rewrite(None, b"data", headers)
    assert out == (None, b"data", [(VALUE_SCHEMA_ID_HEADER, framed(1043, b"\x00"))])
    unmapped: Headers = [(VALUE_SCHEMA_ID_HEADER, framed(99))]
    assert rewriter().rewrite(None, b"data", unmapped) == Missing("value", 99, "header")


def test_an_unmapped_guid_is_missing_by_its_canonical_name() -> None:
    other = uuid.UUID(int=5)
    headers: Headers = [(VALUE_SCHEMA_ID_HEADER, b"\x01" + other.bytes)]
    missing = rewriter().rewrite(None, b"data", headers)
    assert missing == Missing("value", str(other), "header")
    assert "GUID 00000000-0000-0000-0000-000000000005 (header)" in str(missing)


def test_schema_headers_that_name_nothing_leave_the_record_as_it_is() -> None:
    headers: Headers = [
        (VALUE_SCHEMA_ID_HEADER, None),
        (VALUE_SCHEMA_ID_HEADER, b"\x01" + SOURCE_GUID.bytes[:15]),  # too short for a GUID
        (KEY_SCHEMA_ID_HEADER, b"\x07short"),
    ]
    assert rewriter().rewrite(framed(99), framed(99), headers) is None


def test_a_newer_mapping_replaces_the_older_and_bad_ones_change_nothing() -> None:
    ids = SchemaIdRewriter({7: 1042})
    ids.learn(SchemaIdMapping("primary", 7, 2000))
    assert ids.rewrite(None, framed(7), None) == (None, framed(2000), None)
    for bad in (
        SchemaIdMapping("primary", 7, 2**32),
        SchemaIdMapping("primary", -1, 3),
        SchemaIdMapping("primary", True, 3),
        SchemaIdMapping("primary", "not-a-uuid", str(TARGET_GUID)),
        SchemaIdMapping("primary", str(SOURCE_GUID), 3),
    ):
        with pytest.raises(RecordFormatError):
            ids.learn(bad)
    assert ids.ids == {7: 2000}
    assert ids.guids == {}
    assert rewriter().guids == {str(SOURCE_GUID): str(TARGET_GUID)}


# -- properties --

ids = st.integers(min_value=0, max_value=2**32 - 1)
maps = st.dictionaries(ids, ids, min_size=1, max_size=8)
header_lists = st.lists(
    st.tuples(st.sampled_from(["a", "traceparent", "__key_schema_idx"]), st.binary(max_size=20)),
    max_size=4,
)


@given(maps, st.data(), st.binary(max_size=300), st.binary(max_size=300))
def test_bytes_after_the_id_are_unchanged(
    mapping: dict[int, int], data: st.DataObject, key_rest: bytes, value_rest: bytes
) -> None:
    key_id, value_id = (
        data.draw(st.sampled_from(sorted(mapping))),
        data.draw(st.sampled_from(sorted(mapping))),
    )
    out = SchemaIdRewriter(mapping).rewrite(
        framed(key_id, key_rest), framed(value_id, value_rest), None
    )
    assert out == (framed(mapping[key_id], key_rest), framed(mapping[value_id], value_rest), None)


@given(st.binary(max_size=300), header_lists)
def test_bytes_after_the_guid_are_unchanged(rest: bytes, others: list[tuple[str, bytes]]) -> None:
    headers: Headers = [*others, (VALUE_SCHEMA_ID_HEADER, b"\x01" + SOURCE_GUID.bytes + rest)]
    out = rewriter().rewrite(None, rest, headers)
    assert out == (
        None,
        rest,
        [*others, (VALUE_SCHEMA_ID_HEADER, b"\x01" + TARGET_GUID.bytes + rest)],
    )


unframed = st.one_of(
    st.none(),
    st.binary(max_size=4),
    st.binary(min_size=1, max_size=300).filter(lambda b: b[0] != 0),
)


@given(maps, unframed, unframed, st.one_of(st.none(), header_lists))
def test_unframed_records_come_back_identical(
    mapping: dict[int, int],
    key: bytes | None,
    value: bytes | None,
    headers: list[tuple[str, bytes]] | None,
) -> None:
    assert SchemaIdRewriter(mapping).rewrite(key, value, list(headers) if headers else None) is None


def _strategies(key: str, value: str, *subjects: tuple[str, set[int]]) -> SchemaIdRewriter:
    rewriter = SchemaIdRewriter({7: 1042, 9: 1044}, strategies=(key, value))
    for name, ids in subjects:
        rewriter.describe(SchemaSubject("primary", name, frozenset(ids)))
    return rewriter


def _frame(schema_id: int) -> bytes:
    return b"\x00" + schema_id.to_bytes(4, "big") + b"data"


def test_topic_record_name_subjects_describe_their_topic_only() -> None:
    order, refund = ("orders-com.acme.Order", {7}), ("refunds-com.acme.Refund", {9})
    rewriter = _strategies("TopicNameStrategy", "TopicRecordNameStrategy", order, refund)
    assert rewriter.rewrite(None, _frame(7), None, "orders") == (None, _frame(1042), None)
    refused = rewriter.rewrite(None, _frame(9), None, "orders")  # refunds' schema
    assert isinstance(refused, Missing) and not refused.described
    assert rewriter.rewrite(None, _frame(9), None, "payments") is None  # no subject: as it is
    assert rewriter.rewrite(_frame(7), None, None, "orders") is None  # keys: no orders-key


def test_record_name_subjects_describe_every_topic() -> None:
    rewriter = _strategies(
        "RecordNameStrategy", "RecordNameStrategy", ("com.acme.Order", {7}), ("orders-value", {9})
    )
    assert rewriter.rewrite(_frame(7), _frame(7), None, "any") == (_frame(1042), _frame(1042), None)
    refused = rewriter.rewrite(None, _frame(9), None, "any")  # orders-value names no record
    assert isinstance(refused, Missing) and not refused.described


def test_an_unknown_strategy_is_refused() -> None:
    with pytest.raises(RecordFormatError, match="strategies"):
        SchemaIdRewriter(strategies=("TopicNameStrategy", "Mine"))
