"""The offsets topic's record kinds: one key shape, told apart by the name it starts with."""

from __future__ import annotations

import json

from mm2.copy.assignment import assignment_key
from mm2.copy.position_record import position_key
from mm2.copy.ready import ready_key
from mm2.copy.source_ends import source_ends_key
from mm2.records.offsets_topic import (
    ASSIGNMENT,
    KINDS,
    READY,
    SCHEMA,
    SOURCE_ENDS,
    kind_of,
    partition_of,
)
from mm2.records.schema_ids import SchemaPasses


def test_every_kind_is_keyed_like_connects_offsets_and_named_in_the_table() -> None:
    keys = {
        "MirrorSourceConnector": position_key("MirrorSourceConnector", "primary", "orders", 3),
        ASSIGNMENT: assignment_key("primary->backup"),
        READY: ready_key("primary->backup", 2),
        SOURCE_ENDS: source_ends_key("primary->backup"),
        SCHEMA: SchemaPasses("primary", 4).key(),
    }
    for name, key in keys.items():
        loaded = json.loads(key)
        assert isinstance(loaded, list) and len(loaded) == 2 and loaded[0] == name, key
        assert kind_of(key) == name
        assert name in KINDS
    assert set(KINDS) == set(keys)
    # compact, as Connect writes its keys: Apache MM2 finds its positions byte for byte
    assert assignment_key("a->b") == b'["mm2-copy-assignment",{"flow":"a->b"}]'


def test_a_kinds_partition_is_read_only_from_its_own_keys() -> None:
    assert partition_of(ready_key("a->b", 1), READY) == {"flow": "a->b", "task": 1}
    assert partition_of(assignment_key("a->b"), READY) is None
    # a position of a topic named like a kind is still a position
    tricky = position_key("MirrorSourceConnector", "a", READY, 0)
    assert partition_of(tricky, READY) is None and kind_of(tricky) == "MirrorSourceConnector"
    for broken in (None, b"", b"not json", b'{"a":1}', b'["x"]', b'["mm2-copy-ready",[1]]'):
        assert partition_of(broken, READY) is None
        assert kind_of(broken) is None
