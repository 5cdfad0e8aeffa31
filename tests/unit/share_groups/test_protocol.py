"""The share-group requests' bytes and the client settings taken from a librdkafka config."""

from __future__ import annotations

import uuid
from io import BytesIO

import pytest

from mm2.errors import ConfigError
from mm2.share_groups.admin import client_kwargs
from mm2.share_groups.protocol import AlterShareGroupOffsets, DescribeShareGroupOffsets, Uuid


def test_a_uuid_is_sixteen_bytes_both_ways() -> None:
    value = str(uuid.uuid4())
    raw = Uuid.encode(value)
    assert len(raw) == 16
    assert Uuid.decode(BytesIO(raw)) == value
    with pytest.raises(ValueError, match="underrun"):
        Uuid.decode(BytesIO(raw[:5]))


def test_alter_groups_the_partitions_by_topic_in_kafkas_compact_encoding() -> None:
    request = AlterShareGroupOffsets("g", {("t", 1): 7, ("t", 0): 5, ("u", 0): 300})
    struct = request.prepare({91: (0, 0)})
    # group "g"; 2 topics; "t" with partitions 0 -> 5 and 1 -> 7; "u" with 0 -> 300; no tags
    expected = (
        b"\x02g"
        + b"\x03"
        + b"\x02t"
        + b"\x03"
        + b"\x00\x00\x00\x00"
        + (5).to_bytes(8, "big")
        + b"\x00"
        + b"\x00\x00\x00\x01"
        + (7).to_bytes(8, "big")
        + b"\x00"
        + b"\x00"
        + b"\x02u"
        + b"\x02"
        + b"\x00\x00\x00\x00"
        + (300).to_bytes(8, "big")
        + b"\x00"
        + b"\x00"
        + b"\x00"
    )
    assert struct.encode() == expected


def test_describe_asks_for_every_topic_of_one_group() -> None:
    struct = DescribeShareGroupOffsets("orders").prepare({90: (0, 1)})
    # one group "orders", topics null (0), no tags
    assert struct.encode() == b"\x02\x07orders\x00\x00\x00"


def test_a_broker_without_the_api_is_said_as_such() -> None:
    from aiokafka.errors import IncompatibleBrokerVersion

    with pytest.raises(IncompatibleBrokerVersion):
        DescribeShareGroupOffsets("g").prepare({})


def test_client_settings_from_librdkafka_keys() -> None:
    plain = client_kwargs({"bootstrap.servers": "a:9092,b:9092", "client.id": "x"})
    assert plain["bootstrap_servers"] == ["a:9092", "b:9092"]
    assert (plain["security_protocol"], plain["client_id"]) == ("PLAINTEXT", "x")
    scram = client_kwargs(
        {
            "bootstrap.servers": "a:9092",
            "security.protocol": "sasl_plaintext",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": "u",
            "sasl.password": "p",
        }
    )
    assert (scram["sasl_mechanism"], scram["sasl_plain_username"]) == ("SCRAM-SHA-512", "u")
    with pytest.raises(ConfigError, match=r"sasl\.mechanism: GSSAPI is not supported"):
        client_kwargs({"bootstrap.servers": "a:9092", "security.protocol": "SASL_SSL"})
