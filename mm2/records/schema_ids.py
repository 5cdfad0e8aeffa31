"""The schema-ID map of a flow, as records of its offsets topic on the target (issue 25).

A flow whose target registry numbers schemas its own way keeps, beside its positions, one
record per schema it registered: the source registry's ID (or GUID) and the target's. Apache
MM2 reads only its own connectors' keys there, so these records are invisible to it; the
topic is compacted, so the newest mapping of a key is the one that stays. The schema connector
writes them; the copy tasks read them and rewrite the IDs in the records they copy.

Key: `["MirrorSchemaConnector",{"cluster":<source alias>,"id":<source id>}]` (or `"guid"`
instead of `"id"`); value: `{"target":<target id>}` (or the target GUID as a string).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from mm2.errors import RecordFormatError

__all__ = ["SCHEMA_CONNECTOR", "SchemaIdMapping", "decode_schema_id_mapping"]

SCHEMA_CONNECTOR = "MirrorSchemaConnector"


@dataclass(frozen=True)
class SchemaIdMapping:
    """One schema's ID in the source registry (`source`) and in the target's (`target`): ints
    for the 4-byte IDs of the payload prefix, GUID strings for the schema-ID headers."""

    cluster: str  # the source alias
    source: int | str
    target: int | str

    @property
    def is_guid(self) -> bool:
        return isinstance(self.source, str)

    def key(self) -> bytes:
        field = "guid" if self.is_guid else "id"
        partition = {"cluster": self.cluster, field: self.source}
        return json.dumps([SCHEMA_CONNECTOR, partition], separators=(",", ":")).encode()

    def value(self) -> bytes:
        return json.dumps({"target": self.target}, separators=(",", ":")).encode()


def decode_schema_id_mapping(key: bytes | None, value: bytes | None) -> SchemaIdMapping | None:
    """The mapping a record of the offsets topic holds; None for every other record (positions,
    other connectors' keys, tombstones). A record with the schema connector's key that does not
    parse raises RecordFormatError naming what is wrong."""
    if not key or not value or SCHEMA_CONNECTOR.encode() not in key:
        return None
    try:
        name, partition = json.loads(key)
        if name != SCHEMA_CONNECTOR:
            return None
        target = json.loads(value)["target"]
        cluster = partition["cluster"]
        source = partition["guid"] if "guid" in partition else partition["id"]
    except (ValueError, TypeError, KeyError) as exc:
        raise RecordFormatError(
            f"a {SCHEMA_CONNECTOR} record of the offsets topic does not parse: {exc!r} "
            f"(key {key[:200]!r})"
        ) from exc
    if isinstance(source, bool) or not isinstance(source, int | str):
        raise RecordFormatError(f"{SCHEMA_CONNECTOR}: the source id {source!r} is no id or GUID")
    if type(target) is not type(source):
        raise RecordFormatError(
            f"{SCHEMA_CONNECTOR}: source {source!r} and target {target!r} are not of one kind"
        )
    return SchemaIdMapping(str(cluster), source, target)
