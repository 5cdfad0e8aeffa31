"""The record kinds of a flow's offsets topic (`mm2-offsets.<source>.internal` on the target).

Every record there is keyed like Connect's offsets, `["<name>",{...}]`: Apache's positions under
the source connector's name, and mm2's own kinds under names no Connect worker runs, so Apache
MM2 reading the topic leaves them alone. This module names the kinds and reads and writes
their keys; each kind's value is its own module's (listed in KINDS) and docs/architecture.md,
"Record kinds", has the table.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = [
    "ASSIGNMENT",
    "KINDS",
    "READY",
    "SCHEMA",
    "SOURCE_ENDS",
    "kind_key",
    "kind_of",
    "partition_of",
]

ASSIGNMENT = "mm2-copy-assignment"
READY = "mm2-copy-ready"
SOURCE_ENDS = "mm2-source-ends"
SCHEMA = "MirrorSchemaConnector"

# name in the key -> what the records are, and the module that reads and writes their values
# (positions are keyed by the source connector's name, MirrorSourceConnector by default)
KINDS: Mapping[str, str] = {
    "MirrorSourceConnector": "positions: mm2.copy.position_record",
    ASSIGNMENT: "partitions added to a running epoch: mm2.copy.assignment",
    READY: "a copy task copies in an epoch: mm2.copy.ready",
    SOURCE_ENDS: "the source's end offsets for the recovery point: mm2.copy.source_ends",
    SCHEMA: "schema-ID mappings, subjects and passes: mm2.records.schema_ids",
}


def kind_key(name: str, partition: Mapping[str, object]) -> bytes:
    """`["<name>",{...}]`, compact, as mm2 writes its own kinds' keys."""
    return json.dumps([name, dict(partition)], separators=(",", ":")).encode()


def kind_of(key: bytes | None) -> str | None:
    """The name a key starts with (None: no key of Connect's shape)."""
    loaded = _load(key)
    return None if loaded is None else loaded[0]


def partition_of(key: bytes | None, name: str) -> dict[str, Any] | None:
    """The partition map of a key of kind `name`; None for every other record (another kind,
    a key of another shape, no key). Cheap for the others: most records of the topic are
    positions, and a key without the name is not parsed."""
    if not key or name.encode() not in key:
        return None
    loaded = _load(key)
    return loaded[1] if loaded is not None and loaded[0] == name else None


def _load(key: bytes | None) -> tuple[str, dict[str, Any]] | None:
    if not key:
        return None
    try:
        loaded = json.loads(key)
    except ValueError:
        return None
    if (
        isinstance(loaded, list)
        and len(loaded) == 2
        and isinstance(loaded[0], str)
        and isinstance(loaded[1], dict)
    ):
        return loaded[0], loaded[1]
    return None
