"""Connect offsets-topic keys/values of the MM2 connectors, byte for byte (reference §2.6)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mm2.errors import RecordFormatError
from mm2.records import (
    ConnectOffsetKey,
    MirrorCheckpointPartition,
    MirrorHeartbeatPartition,
    MirrorSourcePartition,
    decode_offset_value,
    encode_offset_value,
)


def java_string_hash(s: str) -> int:
    h = 0
    for unit in s.encode("utf-16-be").hex(" ", 2).split():
        h = (31 * h + int(unit, 16)) & 0xFFFFFFFF
    return h


def java_hashmap_order(keys: list[str]) -> list[str]:
    """Iteration order of a default-capacity java.util.HashMap holding these (few) keys."""

    def bucket(k: str) -> int:
        x = java_string_hash(k)
        return (x ^ (x >> 16)) & 15

    return sorted(keys, key=bucket)


def test_source_connector_key_bytes() -> None:
    key = ConnectOffsetKey("MirrorSourceConnector", MirrorSourcePartition("A", "t", 0))
    assert key.to_bytes() == b'["MirrorSourceConnector",{"cluster":"A","partition":0,"topic":"t"}]'


def test_checkpoint_connector_key_bytes() -> None:
    key = ConnectOffsetKey("MirrorCheckpointConnector", MirrorCheckpointPartition("g", "A.t", 0))
    assert (
        key.to_bytes() == b'["MirrorCheckpointConnector",{"partition":0,"topic":"A.t","group":"g"}]'
    )


def test_heartbeat_connector_key_bytes() -> None:
    key = ConnectOffsetKey("MirrorHeartbeatConnector", MirrorHeartbeatPartition("A", "B"))
    assert (
        key.to_bytes()
        == b'["MirrorHeartbeatConnector",{"sourceClusterAlias":"A","targetClusterAlias":"B"}]'
    )


@pytest.mark.parametrize(
    "partition",
    [
        MirrorSourcePartition("c", "t", 1),
        MirrorCheckpointPartition("g", "t", 1),
        MirrorHeartbeatPartition("s", "t"),
    ],
)
def test_field_order_is_java_hashmap_order(
    partition: MirrorSourcePartition | MirrorCheckpointPartition | MirrorHeartbeatPartition,
) -> None:
    names = [name for name, _ in partition.fields()]
    assert names == java_hashmap_order(sorted(names))


def test_offset_value_bytes() -> None:
    assert encode_offset_value(42) == b'{"offset":42}'
    assert encode_offset_value(0) == b'{"offset":0}'
    assert decode_offset_value(b'{"offset":42}') == 42
    assert decode_offset_value(b'{ "offset" : -1 }') == -1


def test_strings_are_escaped_like_jackson() -> None:
    key = ConnectOffsetKey("c", MirrorHeartbeatPartition('a"\\/\n\t\x01\x1f', "é€"))
    assert key.to_bytes() == (
        b'["c",{"sourceClusterAlias":"a\\"\\\\/\\n\\t\\u0001\\u001F",'
        b'"targetClusterAlias":"\xc3\xa9\xe2\x82\xac"}]'
    )


def test_keys_parse_in_any_field_order() -> None:
    data = b'["X", {"topic": "t", "cluster": "A", "partition": 3}]'
    assert ConnectOffsetKey.from_bytes(data) == ConnectOffsetKey(
        "X", MirrorSourcePartition("A", "t", 3)
    )


TEXT = st.text(alphabet=st.characters(codec="utf-8"))
PARTITIONS = st.one_of(
    st.builds(MirrorSourcePartition, TEXT, TEXT, st.integers(0, 2**31 - 1)),
    st.builds(MirrorCheckpointPartition, TEXT, TEXT, st.integers(0, 2**31 - 1)),
    st.builds(MirrorHeartbeatPartition, TEXT, TEXT),
)


@given(TEXT, PARTITIONS)
def test_key_round_trip_and_valid_json(
    connector: str,
    partition: MirrorSourcePartition | MirrorCheckpointPartition | MirrorHeartbeatPartition,
) -> None:
    key = ConnectOffsetKey(connector, partition)
    data = key.to_bytes()
    assert ConnectOffsetKey.from_bytes(data) == key
    loaded = json.loads(data)
    assert loaded[0] == connector
    assert list(loaded[1]) == [name for name, _ in partition.fields()]


@given(st.integers(-(2**63), 2**63 - 1))
def test_value_round_trip(offset: int) -> None:
    assert decode_offset_value(encode_offset_value(offset)) == offset


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\xff",
        b"{}",
        b'["only-name"]',
        b'[1, {"sourceClusterAlias":"A","targetClusterAlias":"B"}]',
        b'["c", {"cluster":"A","partition":"0","topic":"t"}]',
        b'["c", {"cluster":"A","partition":true,"topic":"t"}]',
        b'["c", {"cluster":"A","topic":"t"}]',
        b'["c", {"sourceClusterAlias":"A","targetClusterAlias":7}]',
    ],
)
def test_malformed_keys(data: bytes) -> None:
    with pytest.raises(RecordFormatError, match="connect offset key"):
        ConnectOffsetKey.from_bytes(data)


@pytest.mark.parametrize("data", [b"", b"[]", b'{"offsets":1}', b'{"offset":"1"}', b"null"])
def test_malformed_values(data: bytes) -> None:
    with pytest.raises(RecordFormatError, match="connect offset value"):
        decode_offset_value(data)
