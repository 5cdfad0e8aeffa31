"""The schema-ID map of a flow, as records of its offsets topic on the target.

A flow that mirrors schemas keeps, beside its positions, three kinds of record of the schema
connector, each keyed like Connect's offsets (`["MirrorSchemaConnector",{...}]`). Apache MM2
reads only its own connectors' keys there, so they are invisible to it; the topic is
compacted, so the newest record of a key is the one that stays. The schema connector writes
them; the copy tasks read them.

- A mapping, one per schema registered: the source registry's ID (or GUID) and the target's.
  Key `{"cluster":<source alias>,"id":<source id>}` (or `"guid"`), value `{"target":<id>}`.
- A subject: every source ID (and GUID) of one source subject's versions, all mapped. Key
  `{"cluster":<alias>,"subject":<name>}`, value `{"ids":[...],"guids":[...]}`. A copy task
  rewrites the ID of a key or value only where it is one of the IDs of a subject that names
  that topic's keys or values.
- A pass: how many passes over the source registry the connector has finished. Key
  `{"cluster":<alias>,"passes":"finished"}`, value `{"passes":<n>}`. A record whose
  look-alike ID is none of its subjects' IDs after three more passes is no framed record.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from mm2.errors import RecordFormatError
from mm2.records.offsets_topic import SCHEMA, kind_key

__all__ = [
    "RECORD_NAME",
    "SCHEMA_CONNECTOR",
    "SUBJECT_STRATEGIES",
    "SchemaIdMapping",
    "SchemaPasses",
    "SchemaRecord",
    "SchemaSubject",
    "decode_schema_id_mapping",
    "decode_schema_record",
]

SCHEMA_CONNECTOR = SCHEMA  # the schema connector, as its records of the offsets topic name it
# Confluent's subject name strategies, as key.subject.name.strategy and
# value.subject.name.strategy name them: which subjects describe a topic's keys and values
SUBJECT_STRATEGIES = ("TopicNameStrategy", "RecordNameStrategy", "TopicRecordNameStrategy")
# A record's fully qualified name (Avro, Protobuf), as the record-name strategies put it in a
# subject: dotted identifiers, never a `-`.
RECORD_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")


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
        return _key({"cluster": self.cluster, field: self.source})

    def value(self) -> bytes:
        return json.dumps({"target": self.target}, separators=(",", ":")).encode()


def _key(partition: dict[str, object]) -> bytes:
    return kind_key(SCHEMA_CONNECTOR, partition)


@dataclass(frozen=True)
class SchemaSubject:
    """The source IDs and GUIDs of one source subject's versions (soft-deleted ones too)."""

    cluster: str
    subject: str
    ids: frozenset[int]
    guids: frozenset[str] = frozenset()

    def key(self) -> bytes:
        return _key({"cluster": self.cluster, "subject": self.subject})

    def value(self) -> bytes:
        body = {"ids": sorted(self.ids), "guids": sorted(self.guids)}
        return json.dumps(body, separators=(",", ":")).encode()


@dataclass(frozen=True)
class SchemaPasses:
    """How many passes over the source registry the schema connector has finished."""

    cluster: str
    passes: int

    def key(self) -> bytes:
        return _key({"cluster": self.cluster, "passes": "finished"})

    def value(self) -> bytes:
        return json.dumps({"passes": self.passes}, separators=(",", ":")).encode()


SchemaRecord = SchemaIdMapping | SchemaSubject | SchemaPasses


def decode_schema_record(key: bytes | None, value: bytes | None) -> SchemaRecord | None:
    """The schema connector's record of the offsets topic; None for every other record
    (positions, other connectors' keys, tombstones). One with the schema connector's key that
    does not parse raises RecordFormatError naming what is wrong."""
    if not key or not value or SCHEMA_CONNECTOR.encode() not in key:
        return None
    try:
        name, partition = json.loads(key)
        if name != SCHEMA_CONNECTOR:
            return None
        body = json.loads(value)
        cluster = str(partition["cluster"])
        if "subject" in partition:
            ids = frozenset(body["ids"])
            guids = frozenset(body.get("guids", ()))
            if not all(isinstance(i, int) and not isinstance(i, bool) for i in ids) or not all(
                isinstance(g, str) for g in guids
            ):
                raise TypeError(f"ids {sorted(map(str, ids))} or guids are not IDs and GUIDs")
            return SchemaSubject(cluster, str(partition["subject"]), ids, guids)
        if "passes" in partition:
            passes = body["passes"]
            if not isinstance(passes, int) or isinstance(passes, bool):
                raise TypeError(f"passes {passes!r} is no count")
            return SchemaPasses(cluster, passes)
    except (ValueError, TypeError, KeyError) as exc:
        raise RecordFormatError(
            f"a {SCHEMA_CONNECTOR} record of the offsets topic does not parse: {exc!r} "
            f"(key {key[:200]!r})"
        ) from exc
    return decode_schema_id_mapping(key, value)


def decode_schema_id_mapping(key: bytes | None, value: bytes | None) -> SchemaIdMapping | None:
    """The mapping a record of the offsets topic holds; None for every other record (positions,
    other connectors' keys, tombstones, the schema connector's other records). A record with
    the schema connector's key that does not parse raises RecordFormatError naming what is
    wrong."""
    if not key or not value or SCHEMA_CONNECTOR.encode() not in key:
        return None
    try:
        name, partition = json.loads(key)
        if name != SCHEMA_CONNECTOR or "subject" in partition or "passes" in partition:
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
