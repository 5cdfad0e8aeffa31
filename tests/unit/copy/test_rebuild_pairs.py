"""How the lost-offsets-topic walk (mm2.copy.rebuild) pairs a copy with its source record: byte
for byte, or, in a flow that rewrites schema IDs, but for the 4 ID bytes of a payload prefix."""

from __future__ import annotations

import pytest

from mm2.copy.rebuild import _same_data

SOURCE = b"\x00" + (1).to_bytes(4, "big") + b"avro"
COPY = b"\x00" + (5).to_bytes(4, "big") + b"avro"


@pytest.mark.parametrize(
    ("copy", "original", "framed", "same"),
    [
        (SOURCE, SOURCE, False, True),
        (COPY, SOURCE, False, False),  # no schema IDs rewritten: the copy is not this record
        (COPY, SOURCE, True, True),  # the ID translated, the rest byte for byte
        (COPY[:-1] + b"X", SOURCE, True, False),  # the data differs
        (b"\x01" + COPY[1:], b"\x01" + SOURCE[1:], True, False),  # no prefix: bytes compared
        (None, None, True, True),
        (COPY, None, True, False),
    ],
)
def test_a_copy_pairs_with_its_source_record(
    copy: bytes | None, original: bytes | None, framed: bool, same: bool
) -> None:
    assert _same_data(copy, original, framed) is same
