"""Schema IDs rewritten in flight, for a target registry that numbers schemas its own way.

A record written with a Confluent serializer names its schema in one of two places, for its
key and its value independently:
- the payload prefix: magic byte 0x00, the schema's 4-byte big-endian ID, then (Protobuf only)
  the message indexes as zig-zag varints, then the serialized data;
- a header, `__key_schema_id` / `__value_schema_id` (Java CP 8.0+, confluent-kafka-python
  2.10.1+): 0x01 and the schema's 16-byte GUID (or 0x00 and a 4-byte ID, which the
  deserializers read too), then the message indexes. Such a key or value has no prefix.

Copying to a target whose registry gave the schema another ID replaces those 4 (or 16) bytes
and nothing else: message indexes and data stay byte for byte, and so does every other header
and their order.

A payload prefix is only a guess: a LongSerializer key below 2**56, a raw Avro value starting
with a zero, anything else whose first byte is 0x00 looks the same. So a prefix is read as one
only where the source registry describes the topic's keys (values): a subject names them under
the flow's subject name strategy (`<topic>-key`, `<topic>-value`; the record-name strategies
when configured; mm2.records.schema_ids.SchemaSubject), and the ID is then rewritten only if it
is one of those subjects' IDs. A key or value of a topic no subject names is copied byte for
byte, whatever its first byte. One whose ID is none of its subjects' IDs (yet) is `Missing`
with `described=False`: a schema registered a moment ago, or no prefix at all; the gate
(mm2.copy.schema_gate) holds its partition until the schema connector's passes decide, and
what they decide is remembered (`unframed`). A header names its schema for sure and is always
rewritten. A record whose ID has no target ID yet is not rewritten: `rewrite` answers
`Missing`, and the copy loop holds its partition rather than copy an ID that names another
schema (or none) on the target.

This runs once per record in the copy loop's hot Python loop: no regex, no logging, and for
a record that names no schema (no 0x00 first byte, no such header) no allocation at all.
The maps are kept in wire form (the 4 or 16 source bytes to the replacement's bytes, magic
byte included), so a lookup is a slice and a dict probe.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from mm2.errors import RecordFormatError
from mm2.records.schema_ids import (
    RECORD_NAME,
    SUBJECT_STRATEGIES,
    SchemaIdMapping,
    SchemaSubject,
)

__all__ = [
    "KEY_SCHEMA_ID_HEADER",
    "STRATEGIES",
    "VALUE_SCHEMA_ID_HEADER",
    "HeaderValue",
    "Headers",
    "Missing",
    "Rewritten",
    "SchemaIdRewriter",
]

KEY_SCHEMA_ID_HEADER = "__key_schema_id"
VALUE_SCHEMA_ID_HEADER = "__value_schema_id"
_SCHEMA_HEADERS = frozenset((KEY_SCHEMA_ID_HEADER, VALUE_SCHEMA_ID_HEADER))

# What a consumer's Message.headers() gives (a list) and what Producer.produce() takes.
HeaderValue = str | bytes | None
Headers = list[tuple[str, HeaderValue]] | dict[str, HeaderValue]

_ID_MAX = 2**32 - 1  # what 4 bytes carry; registries hand out positive Java ints
Field = Literal["key", "value"]
_NONE: frozenset[Field] = frozenset()
STRATEGIES = SUBJECT_STRATEGIES


# The record to produce, (key, value, headers), every schema ID translated: a plain tuple,
# since building a NamedTuple costs more than the rest of a rewrite.
Rewritten = tuple[bytes | None, bytes | None, Headers | None]


@dataclass(frozen=True, slots=True)
class Missing:
    """A schema ID (int) or GUID (str) of the source registry that has no target ID yet, in
    the record's key or value, found in its payload prefix or in its header."""

    field: Field
    schema: int | str
    where: Literal["prefix", "header"]
    # False: an ID none of the subjects naming the topic's keys (values) holds, as far as the
    # map says: a schema registered a moment ago, or data that only looks framed.
    described: bool = True

    def __str__(self) -> str:
        what = "GUID" if isinstance(self.schema, str) else "ID"
        place = "payload prefix" if self.where == "prefix" else "header"
        if not self.described:
            return (
                f"the {self.field}'s {place} reads as schema ID {self.schema}, which no "
                "subject of the topic holds yet"
            )
        return f"the {self.field}'s schema {what} {self.schema} ({place}) has no target {what} yet"


_UNKNOWN = object()


def _id_bytes(schema_id: int) -> bytes:
    if isinstance(schema_id, bool) or not isinstance(schema_id, int):
        raise RecordFormatError(f"schema ID {schema_id!r} is no integer")
    if not 0 <= schema_id <= _ID_MAX:
        raise RecordFormatError(f"schema ID {schema_id} does not fit the 4 bytes of the wire")
    return schema_id.to_bytes(4, "big")


def _guid_bytes(guid: str) -> bytes:
    try:
        return uuid.UUID(guid).bytes
    except ValueError as exc:
        raise RecordFormatError(f"schema GUID {guid!r} is no UUID") from exc


class SchemaIdRewriter:
    """Translates the schema IDs and GUIDs of records, source registry to target's.

    `strategies` (key's, value's): the subject name strategy that says which subjects describe
    a topic's keys and values, read from the subjects handed to `describe`; a prefix is read as
    one only in a described topic. None reads every 0x00-first key and value as framed (the
    wire-format tests). `prefixed_keys` / `prefixed_values` turn the prefix off for keys /
    values altogether; the schema-ID headers are always read (their names say what they are).
    """

    __slots__ = (
        "_allowed",
        "_guids",
        "_ids",
        "_keys",
        "_strategies",
        "_subjects",
        "_unframed",
        "_values",
    )

    def __init__(
        self,
        ids: Mapping[int, int] | None = None,
        guids: Mapping[str, str] | None = None,
        *,
        prefixed_keys: bool = True,
        prefixed_values: bool = True,
        strategies: tuple[str, str] | None = None,
    ) -> None:
        # source ID's 4 bytes -> 0x00 + the target ID's 4 bytes
        self._ids: dict[bytes, bytes] = {}
        # source GUID's 16 bytes -> 0x01 + the target GUID's 16 bytes
        self._guids: dict[bytes, bytes] = {}
        self._keys = prefixed_keys
        self._values = prefixed_values
        if strategies is not None and not set(strategies) <= set(STRATEGIES):
            raise RecordFormatError(f"subject name strategies {strategies}: not of {STRATEGIES}")
        self._strategies = strategies
        self._subjects: dict[str, frozenset[bytes]] = {}  # subject -> its source IDs' 4 bytes
        # (topic, field) -> the IDs of the subjects describing it; None: no subject does
        self._allowed: dict[tuple[str, Field], frozenset[bytes] | None] = {}
        # (topic, field) -> look-alike IDs the schema connector's passes said are no schema's
        self._unframed: dict[tuple[str, Field], set[bytes]] = {}
        for source, target in (ids or {}).items():
            self.learn(SchemaIdMapping("", source, target))
        for source_guid, target_guid in (guids or {}).items():
            self.learn(SchemaIdMapping("", source_guid, target_guid))

    def describe(self, subject: SchemaSubject) -> None:
        """Take a subject's source IDs (a newer record of the subject replaces the older)."""
        self._subjects[subject.subject] = frozenset(_id_bytes(i) for i in subject.ids)
        self._allowed.clear()

    def unframed(self, topic: str, field: Field, schema_id: int) -> None:
        """Bytes 1-4 of a `topic` key (value) reading as `schema_id` are no schema ID: copy
        such records as they are, while no subject of the topic holds that ID."""
        self._unframed.setdefault((topic, field), set()).add(_id_bytes(schema_id))

    def _allowed_ids(self, topic: str, field: Field) -> frozenset[bytes] | None:
        """The source IDs of the subjects that describe `topic`'s keys (values); None when no
        subject does. Cached until the next `describe`."""
        found = self._allowed.get((topic, field), _UNKNOWN)
        if found is not _UNKNOWN:
            return found  # type: ignore[return-value]
        assert self._strategies is not None
        strategy = self._strategies[0 if field == "key" else 1]
        if strategy == "TopicNameStrategy":
            names = [n for n in (f"{topic}-{field}",) if n in self._subjects]
        elif strategy == "TopicRecordNameStrategy":
            head = f"{topic}-"
            names = [
                n
                for n in self._subjects
                if n.startswith(head)
                and n[len(head) :] not in ("key", "value")
                and RECORD_NAME.fullmatch(n[len(head) :])
            ]
        else:  # RecordNameStrategy: the subject is the record's name, whatever the topic
            names = [n for n in self._subjects if RECORD_NAME.fullmatch(n)]
        allowed = frozenset().union(*(self._subjects[n] for n in names)) if names else None
        self._allowed[(topic, field)] = allowed
        return allowed

    def learn(self, mapping: SchemaIdMapping) -> None:
        """Take one mapping (a newer one of the same source ID replaces the older); raises
        RecordFormatError, changing nothing, for one that no wire format can carry."""
        source, target = mapping.source, mapping.target
        if isinstance(source, str) and isinstance(target, str):
            self._guids[_guid_bytes(source)] = b"\x01" + _guid_bytes(target)
        elif isinstance(source, int) and isinstance(target, int):
            self._ids[_id_bytes(source)] = b"\x00" + _id_bytes(target)
        else:
            raise RecordFormatError(f"schema {source!r} -> {target!r}: not of one kind")

    @property
    def ids(self) -> dict[int, int]:
        """The ID map as it stands (a copy, for status and tests)."""
        return {
            int.from_bytes(s, "big"): int.from_bytes(t[1:], "big") for s, t in self._ids.items()
        }

    @property
    def guids(self) -> dict[str, str]:
        """The GUID map as it stands, canonical UUID strings (a copy)."""
        return {
            str(uuid.UUID(bytes=s)): str(uuid.UUID(bytes=t[1:])) for s, t in self._guids.items()
        }

    def rewrite(
        self, key: bytes | None, value: bytes | None, headers: Headers | None, topic: str = ""
    ) -> Rewritten | Missing | None:
        """The record of `topic` with its schema IDs translated; None when it names no schema
        (copy it as it is); Missing when one it names has no target ID yet (the first found)."""
        if headers:
            if isinstance(headers, dict):  # a consumer gives a list; produce() takes both
                headers = list(headers.items())
            for name, _ in headers:
                if name in _SCHEMA_HEADERS:
                    return self._with_headers(key, value, headers, topic)
        payloads = self._payloads(key, value, topic)
        if isinstance(payloads, Missing):
            return payloads
        if payloads[0] is key and payloads[1] is value:
            return None
        return (*payloads, headers)

    def _payloads(
        self,
        key: bytes | None,
        value: bytes | None,
        topic: str,
        in_header: frozenset[Field] = _NONE,
    ) -> tuple[bytes | None, bytes | None] | Missing:
        """Key and value with their schema-ID prefixes translated, where the flow rewrites that
        field's prefixes and no header names its schema (each as it was when it has none)."""
        out: dict[Field, bytes | None] = {"key": key, "value": value}
        fields: tuple[tuple[Field, bytes | None, bool], ...] = (
            ("value", value, self._values),
            ("key", key, self._keys),
        )
        for field, data, wanted in fields:
            if wanted and field not in in_header and data and data[0] == 0 and len(data) > 4:
                found = self._prefix(data, topic, field, "prefix")
                if isinstance(found, Missing):
                    return found
                if found is not None:
                    out[field] = found
        return out["key"], out["value"]

    def _prefix(
        self, data: bytes, topic: str, field: Field, where: Literal["prefix", "header"]
    ) -> bytes | Missing | None:
        """0x00 + a 4-byte ID + the rest (at least 5 bytes), with the ID translated; None when
        it is no prefix (its topic's keys or values described by no subject, or an ID the
        passes said is none)."""
        sid = data[1:5]
        if self._strategies is not None and where == "prefix":
            allowed = self._allowed_ids(topic, field)
            if allowed is None:
                return None
            if sid not in allowed:
                if sid in self._unframed.get((topic, field), ()):
                    return None
                return Missing(field, int.from_bytes(sid, "big"), where, described=False)
        prefix = self._ids.get(sid)
        if prefix is None:
            return Missing(field, int.from_bytes(sid, "big"), where)
        return prefix + data[5:]

    def _with_headers(
        self,
        key: bytes | None,
        value: bytes | None,
        headers: list[tuple[str, HeaderValue]],
        topic: str,
    ) -> Rewritten | Missing | None:
        """A record with a schema-ID header: every such header rewritten in its place; the
        payload of that field is left alone, the other field may still carry a prefix."""
        out = list(headers)
        in_header: set[Field] = set()
        field: Field
        for i, (name, raw) in enumerate(headers):
            if name == VALUE_SCHEMA_ID_HEADER:
                field = "value"
            elif name == KEY_SCHEMA_ID_HEADER:
                field = "key"
            else:
                continue
            in_header.add(field)
            if not isinstance(raw, bytes):
                continue  # a null (or text) header names no schema
            new = self._reframe(raw, field)
            if isinstance(new, Missing):
                return new
            if new is not None:
                out[i] = (name, new)
        payloads = self._payloads(key, value, topic, frozenset(in_header))
        if isinstance(payloads, Missing):
            return payloads
        if out == headers and payloads[0] is key and payloads[1] is value:
            return None  # schema-ID headers that frame nothing (null, short, other magic)
        return (*payloads, out)

    def _reframe(self, raw: bytes, field: Field) -> bytes | Missing | None:
        """A schema-ID header's value with its GUID (or ID) translated; None if unframed."""
        if raw and raw[0] == 1 and len(raw) > 16:
            guid = self._guids.get(raw[1:17])
            if guid is None:
                return Missing(field, str(uuid.UUID(bytes=raw[1:17])), "header")
            return guid + raw[17:]
        if raw and raw[0] == 0 and len(raw) > 4:
            return self._prefix(raw, "", field, "header")
        return None
