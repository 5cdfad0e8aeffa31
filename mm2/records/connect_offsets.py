"""Kafka Connect offsets-topic keys and values of the three MM2 connectors, as Apache writes them.

Connect's JsonConverter (schemas.enable=false) writes compact Jackson JSON. The key is
`[connectorName, partitionMap]`; the map's key order is Java HashMap iteration order of its
fixed keys, and it matters because log compaction compares key bytes. The value is
`{"offset":N}`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Final

from mm2.errors import RecordFormatError

__all__ = [
    "ConnectOffsetKey",
    "ConnectPartition",
    "MirrorCheckpointPartition",
    "MirrorHeartbeatPartition",
    "MirrorSourcePartition",
    "decode_offset_value",
    "encode_offset_value",
]

# Jackson's short escapes; every other control character is \u00XX with upper-case hex.
_SHORT_ESCAPES: Final = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\f": "\\f",
    "\r": "\\r",
}

Scalar = str | int


def _json_string(value: str) -> str:
    out = ['"']
    for ch in value:
        esc = _SHORT_ESCAPES.get(ch)
        if esc is not None:
            out.append(esc)
        elif ord(ch) < 0x20:
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _json_scalar(value: Scalar) -> str:
    return _json_string(value) if isinstance(value, str) else str(value)


def _json_object(fields: tuple[tuple[str, Scalar], ...]) -> str:
    return "{" + ",".join(f"{_json_string(k)}:{_json_scalar(v)}" for k, v in fields) + "}"


def _utf8(text: str, what: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise RecordFormatError(f"{what}: not encodable as UTF-8 ({exc.reason})") from exc


@dataclass(frozen=True, slots=True)
class MirrorSourcePartition:
    """MirrorSourceConnector's partition `{"cluster","partition","topic"}`; topic is upstream."""

    cluster: str
    topic: str
    partition: int

    def fields(self) -> tuple[tuple[str, Scalar], ...]:
        return (("cluster", self.cluster), ("partition", self.partition), ("topic", self.topic))


@dataclass(frozen=True, slots=True)
class MirrorCheckpointPartition:
    """MirrorCheckpointConnector partition `{"partition","topic","group"}`; topic is downstream."""

    group: str
    topic: str
    partition: int

    def fields(self) -> tuple[tuple[str, Scalar], ...]:
        return (("partition", self.partition), ("topic", self.topic), ("group", self.group))


@dataclass(frozen=True, slots=True)
class MirrorHeartbeatPartition:
    """MirrorHeartbeatConnector's partition `{"sourceClusterAlias","targetClusterAlias"}`."""

    source_cluster_alias: str
    target_cluster_alias: str

    def fields(self) -> tuple[tuple[str, Scalar], ...]:
        return (
            ("sourceClusterAlias", self.source_cluster_alias),
            ("targetClusterAlias", self.target_cluster_alias),
        )


ConnectPartition = MirrorSourcePartition | MirrorCheckpointPartition | MirrorHeartbeatPartition


def _str_field(partition: dict[str, object], key: str) -> str:
    value = partition[key]
    if not isinstance(value, str):
        raise RecordFormatError(f"connect offset key: {key!r} must be a string, got {value!r}")
    return value


def _int_field(partition: dict[str, object], key: str) -> int:
    value = partition[key]
    if not isinstance(value, int) or isinstance(value, bool):
        raise RecordFormatError(f"connect offset key: {key!r} must be an integer, got {value!r}")
    return value


def _partition_from_map(partition: dict[str, object]) -> ConnectPartition:
    keys = set(partition)
    if keys == {"cluster", "partition", "topic"}:
        return MirrorSourcePartition(
            _str_field(partition, "cluster"),
            _str_field(partition, "topic"),
            _int_field(partition, "partition"),
        )
    if keys == {"group", "partition", "topic"}:
        return MirrorCheckpointPartition(
            _str_field(partition, "group"),
            _str_field(partition, "topic"),
            _int_field(partition, "partition"),
        )
    if keys == {"sourceClusterAlias", "targetClusterAlias"}:
        return MirrorHeartbeatPartition(
            _str_field(partition, "sourceClusterAlias"),
            _str_field(partition, "targetClusterAlias"),
        )
    raise RecordFormatError(f"connect offset key: not an MM2 source partition: {sorted(keys)}")


def _load_json(data: bytes, what: str) -> object:
    try:
        loaded: object = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RecordFormatError(f"{what}: not UTF-8 JSON: {exc}") from exc
    return loaded


@dataclass(frozen=True, slots=True)
class ConnectOffsetKey:
    """A key of the Connect offsets topic: the connector name and its source partition."""

    connector: str
    partition: ConnectPartition

    def to_bytes(self) -> bytes:
        text = f"[{_json_string(self.connector)},{_json_object(self.partition.fields())}]"
        return _utf8(text, "connect offset key")

    @classmethod
    def from_bytes(cls, data: bytes) -> ConnectOffsetKey:
        """Parse a key in any map key order; raises RecordFormatError if it is not one of MM2's."""
        loaded = _load_json(data, "connect offset key")
        if (
            not isinstance(loaded, list)
            or len(loaded) != 2
            or not isinstance(loaded[0], str)
            or not isinstance(loaded[1], dict)
        ):
            raise RecordFormatError(
                f"connect offset key: expected [connectorName, partitionMap], got {loaded!r}"
            )
        return cls(loaded[0], _partition_from_map(loaded[1]))


def encode_offset_value(offset: int) -> bytes:
    """`{"offset":N}`: the last replicated upstream offset, or 0 for checkpoints and heartbeats."""
    return _json_object((("offset", offset),)).encode("utf-8")


def decode_offset_value(data: bytes) -> int:
    """The N of `{"offset":N}`; raises RecordFormatError for anything else."""
    loaded = _load_json(data, "connect offset value")
    if not isinstance(loaded, dict) or "offset" not in loaded:
        raise RecordFormatError(f'connect offset value: expected {{"offset":N}}, got {loaded!r}')
    offset = loaded["offset"]
    if not isinstance(offset, int) or isinstance(offset, bool):
        raise RecordFormatError(f"connect offset value: offset must be an integer, got {offset!r}")
    return offset
