"""The tombstones that end a left-open transaction (mm2.copy.fencing) are read by nobody: they
are aborted, and a read_uncommitted reader (Apache MM2 without exactly-once, Connect's offsets
reader) finds a key of a connector no mirror runs, which no decoder of the offsets topic takes."""

from __future__ import annotations

import json

from mm2.copy.fencing import FENCE_CONNECTOR, fence_key
from mm2.copy.positions import decode_position
from mm2.copy.ready import decode_ready
from mm2.records.schema_ids import decode_schema_id_mapping


def test_the_fence_key_is_connects_key_shape_of_a_connector_no_mirror_runs() -> None:
    assert json.loads(fence_key("primary->backup")) == [
        FENCE_CONNECTOR,
        {"flow": "primary->backup"},
    ]


def test_no_decoder_of_the_offsets_topic_takes_a_fence_tombstone() -> None:
    key = fence_key("primary->backup")
    assert decode_position(key, None, [], connector=FENCE_CONNECTOR, cluster="primary") is None
    assert decode_position(key, None, [], connector="MirrorSourceConnector",
                           cluster="primary") is None  # fmt: skip
    assert decode_ready(key, None) is None
    assert decode_schema_id_mapping(key, None) is None
