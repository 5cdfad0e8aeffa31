"""A copy task's notice that it copies: Connect's key shape, read back only as a notice."""

from __future__ import annotations

import json

from mm2.copy.position_record import decode_position
from mm2.copy.ready import CopyReady, decode_ready, ready_key
from mm2.records.offsets_topic import READY


def test_a_notice_round_trips_and_is_never_a_position() -> None:
    key, value = ready_key("a->b", 3), json.dumps({"epoch": "e1"}).encode()
    assert json.loads(key) == [READY, {"flow": "a->b", "task": 3}]
    assert decode_ready(key, value) == CopyReady("a->b", 3, "e1")
    position = decode_position(key, value, [], connector="MirrorSourceConnector", cluster="a")
    assert position is None


def test_other_records_are_not_notices() -> None:
    assert decode_ready(None, b"{}") is None
    assert decode_ready(ready_key("a->b", 0), None) is None  # a tombstone
    assert decode_ready(b'["MirrorSourceConnector",{"cluster":"a"}]', b'{"offset":1}') is None
    assert decode_ready(ready_key("a->b", 0), b"not json") is None
