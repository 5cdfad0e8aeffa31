"""The four requests share-group mirroring needs, as Kafka 4.4's brokers define them.

Field for field the schemas that kafka-clients 4.4.0 prints for these versions (each class
names its API key and version); all are flexible versions, so every struct ends in tagged
fields. aiokafka picks the version per connection from the broker's ApiVersions answer, and
raises IncompatibleBrokerVersion on a broker without the API (Kafka before 4.1).
"""

from __future__ import annotations

import uuid
from io import BytesIO
from typing import Any

from aiokafka.protocol.abstract import AbstractType
from aiokafka.protocol.api import Request, RequestStruct, Response
from aiokafka.protocol.types import (
    Boolean,
    CompactArray,
    CompactString,
    Int16,
    Int32,
    Int64,
    Schema,
    TaggedFields,
)

__all__ = [
    "AlterShareGroupOffsets",
    "DescribeShareGroupOffsets",
    "ListGroups",
    "ShareGroupDescribe",
    "Uuid",
]

_STR = CompactString("utf-8")
_TAGS = ("tags", TaggedFields)


def _flexible(*fields: Any) -> Schema:
    """A flexible version's struct: its fields, then the tagged fields every one ends in."""
    return Schema(*fields, _TAGS)


def _array(*fields: Any) -> CompactArray:
    """A compact array of flexible structs."""
    return CompactArray(*fields, _TAGS)


class Uuid(AbstractType[str]):
    """Kafka's 16-byte UUID (aiokafka has no such type); decoded to its text form."""

    @classmethod
    def encode(cls, value: str) -> bytes:
        return uuid.UUID(value).bytes

    @classmethod
    def decode(cls, data: BytesIO) -> str:
        raw = data.read(16)
        if len(raw) != 16:
            raise ValueError("Buffer underrun decoding a UUID")
        return str(uuid.UUID(bytes=raw))

    @classmethod
    def repr(cls, value: str) -> str:
        return value


# -- ListGroups (16) v5: every group of the broker, filtered by type --
class _ListGroupsResponse5(Response):
    API_KEY = 16
    API_VERSION = 5
    SCHEMA = _flexible(
        ("throttle_time_ms", Int32),
        ("error_code", Int16),
        (
            "groups",
            _array(
                ("group_id", _STR),
                ("protocol_type", _STR),
                ("group_state", _STR),
                ("group_type", _STR),
            ),
        ),
    )


class _ListGroupsRequest5(RequestStruct):
    FLEXIBLE_VERSION = True
    API_KEY = 16
    API_VERSION = 5
    RESPONSE_TYPE = _ListGroupsResponse5
    SCHEMA = _flexible(("states_filter", CompactArray(_STR)), ("types_filter", CompactArray(_STR)))


class ListGroups(Request[_ListGroupsRequest5]):
    API_KEY = 16

    def __init__(self, types: list[str]) -> None:
        self._types = types

    def build(self, request_struct_class: type[_ListGroupsRequest5]) -> _ListGroupsRequest5:
        return request_struct_class([], self._types, {})


# -- ShareGroupDescribe (77) v1: a share group's state and members --
_ASSIGNMENT = _flexible(
    (
        "topic_partitions",
        _array(("topic_id", Uuid), ("topic_name", _STR), ("partitions", CompactArray(Int32))),
    ),
)
_MEMBER = (
    ("member_id", _STR),
    ("rack_id", _STR),
    ("member_epoch", Int32),
    ("client_id", _STR),
    ("client_host", _STR),
    ("subscribed_topic_names", CompactArray(_STR)),
    ("assignment", _ASSIGNMENT),
)


class _ShareGroupDescribeResponse1(Response):
    API_KEY = 77
    API_VERSION = 1
    SCHEMA = _flexible(
        ("throttle_time_ms", Int32),
        (
            "groups",
            _array(
                ("error_code", Int16),
                ("error_message", _STR),
                ("group_id", _STR),
                ("group_state", _STR),
                ("group_epoch", Int32),
                ("assignment_epoch", Int32),
                ("assignor_name", _STR),
                ("members", _array(*_MEMBER)),
                ("authorized_operations", Int32),
            ),
        ),
    )


class _ShareGroupDescribeRequest1(RequestStruct):
    FLEXIBLE_VERSION = True
    API_KEY = 77
    API_VERSION = 1
    RESPONSE_TYPE = _ShareGroupDescribeResponse1
    SCHEMA = _flexible(
        ("group_ids", CompactArray(_STR)), ("include_authorized_operations", Boolean)
    )


class ShareGroupDescribe(Request[_ShareGroupDescribeRequest1]):
    API_KEY = 77

    def __init__(self, groups: list[str]) -> None:
        self._groups = groups

    def build(
        self, request_struct_class: type[_ShareGroupDescribeRequest1]
    ) -> _ShareGroupDescribeRequest1:
        return request_struct_class(self._groups, False, {})


# -- DescribeShareGroupOffsets (90) v1: start offsets (and, from v1, lag) per partition --
_START_OFFSET = (
    ("partition_index", Int32),
    ("start_offset", Int64),
    ("leader_epoch", Int32),
    ("lag", Int64),
    ("error_code", Int16),
    ("error_message", _STR),
)


class _DescribeShareGroupOffsetsResponse1(Response):
    API_KEY = 90
    API_VERSION = 1
    SCHEMA = _flexible(
        ("throttle_time_ms", Int32),
        (
            "groups",
            _array(
                ("group_id", _STR),
                (
                    "topics",
                    _array(
                        ("topic_name", _STR),
                        ("topic_id", Uuid),
                        ("partitions", _array(*_START_OFFSET)),
                    ),
                ),
                ("error_code", Int16),
                ("error_message", _STR),
            ),
        ),
    )


class _DescribeShareGroupOffsetsRequest1(RequestStruct):
    FLEXIBLE_VERSION = True
    API_KEY = 90
    API_VERSION = 1
    RESPONSE_TYPE = _DescribeShareGroupOffsetsResponse1
    SCHEMA = _flexible(
        (
            "groups",
            _array(
                ("group_id", _STR),
                ("topics", _array(("topic_name", _STR), ("partitions", CompactArray(Int32)))),
            ),
        ),
    )


class DescribeShareGroupOffsets(Request[_DescribeShareGroupOffsetsRequest1]):
    """One group's start offsets, of every partition it has (topics null)."""

    API_KEY = 90

    def __init__(self, group: str) -> None:
        self._group = group

    def build(
        self, request_struct_class: type[_DescribeShareGroupOffsetsRequest1]
    ) -> _DescribeShareGroupOffsetsRequest1:
        return request_struct_class([(self._group, None, {})], {})


# -- AlterShareGroupOffsets (91) v0: set start offsets of a group without members --
class _AlterShareGroupOffsetsResponse0(Response):
    API_KEY = 91
    API_VERSION = 0
    SCHEMA = _flexible(
        ("throttle_time_ms", Int32),
        ("error_code", Int16),
        ("error_message", _STR),
        (
            "responses",
            _array(
                ("topic_name", _STR),
                ("topic_id", Uuid),
                (
                    "partitions",
                    _array(
                        ("partition_index", Int32), ("error_code", Int16), ("error_message", _STR)
                    ),
                ),
            ),
        ),
    )


class _AlterShareGroupOffsetsRequest0(RequestStruct):
    FLEXIBLE_VERSION = True
    API_KEY = 91
    API_VERSION = 0
    RESPONSE_TYPE = _AlterShareGroupOffsetsResponse0
    SCHEMA = _flexible(
        ("group_id", _STR),
        (
            "topics",
            _array(
                ("topic_name", _STR),
                ("partitions", _array(("partition_index", Int32), ("start_offset", Int64))),
            ),
        ),
    )


class AlterShareGroupOffsets(Request[_AlterShareGroupOffsetsRequest0]):
    API_KEY = 91

    def __init__(self, group: str, offsets: dict[tuple[str, int], int]) -> None:
        self._group = group
        self._offsets = offsets

    def build(
        self, request_struct_class: type[_AlterShareGroupOffsetsRequest0]
    ) -> _AlterShareGroupOffsetsRequest0:
        topics: dict[str, list[Any]] = {}
        for (topic, partition), offset in sorted(self._offsets.items()):
            topics.setdefault(topic, []).append((partition, offset, {}))
        return request_struct_class(
            self._group, [(t, parts, {}) for t, parts in topics.items()], {}
        )
