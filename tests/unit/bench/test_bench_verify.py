"""bench.verify: digests see every field and the order; compare names what went wrong."""

from __future__ import annotations

import hashlib
from typing import cast

from confluent_kafka import Message

from bench.verify import PartitionDigest, _at_end, compare, record_digest_update

Record = tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]], int]
RECORDS: list[Record] = [
    (b"k1", b"v1", [("h", b"1")], 1000),
    (b"k2", b"v2", [], 1001),
    (None, None, [("h", None)], 1002),  # tombstone with a null header value
]


def _digest(records: list[Record], *, timestamps: bool = True) -> str:
    h = hashlib.blake2b(digest_size=16)
    for key, value, headers, ts in records:
        record_digest_update(h, key, value, headers, ts if timestamps else None)
    return h.hexdigest()


def test_same_records_same_digest() -> None:
    assert _digest(RECORDS) == _digest(list(RECORDS))


def test_order_matters() -> None:
    assert _digest(RECORDS) != _digest([RECORDS[1], RECORDS[0], RECORDS[2]])


def test_every_field_matters() -> None:
    base = _digest(RECORDS)
    k, v, h, ts = RECORDS[0]
    variants: list[Record] = [
        (b"k9", v, h, ts),
        (k, b"v9", h, ts),
        (k, v, [("h", b"2")], ts),
        (k, v, [("g", b"1")], ts),
        (k, v, [], ts),
        (k, v, h, ts + 1),
        (None, v, h, ts),
        (b"", v, h, ts),  # empty is not null
    ]
    for changed in variants:
        assert _digest([changed, *RECORDS[1:]]) != base, changed


def test_fields_cannot_blur_into_each_other() -> None:
    assert _digest([(b"ab", b"c", [], 0)]) != _digest([(b"a", b"bc", [], 0)])


def test_timestamps_can_be_left_out() -> None:
    shifted = [(k, v, h, ts + 5) for k, v, h, ts in RECORDS]
    assert _digest(RECORDS, timestamps=False) == _digest(shifted, timestamps=False)
    assert _digest(RECORDS) != _digest(shifted)


def test_compare_passes_equal_partitions() -> None:
    side = {"t": {0: PartitionDigest(3, "aa"), 1: PartitionDigest(0, "bb")}}
    verdict = compare(side, side)
    assert verdict.ok
    assert verdict.records_source == verdict.records_target == 3
    assert verdict.problems == ()


def test_compare_reports_loss_duplicates_reordering_and_missing_topics() -> None:
    source = {
        "t": {0: PartitionDigest(3, "a"), 1: PartitionDigest(3, "b"), 2: PartitionDigest(3, "c")},
        "u": {0: PartitionDigest(1, "d")},
    }
    target = {
        "t": {0: PartitionDigest(2, "x"), 1: PartitionDigest(4, "y"), 2: PartitionDigest(3, "z")}
    }
    verdict = compare(source, target)
    assert not verdict.ok
    assert verdict.problems == (
        "t-0: lost 1 of 3",
        "t-1: 1 extra (duplicates)",
        "t-2: same count, different records or order",
        "u: missing on the target",
    )


class _Eof:
    """The few Message methods an end-of-partition event is read with."""

    def __init__(self, topic: str, partition: int, offset: int) -> None:
        self._where = (topic, partition, offset)

    def topic(self) -> str:
        return self._where[0]

    def partition(self) -> int:
        return self._where[1]

    def offset(self) -> int:
        return self._where[2]


def test_a_partition_ends_when_the_position_passes_a_commit_marker() -> None:
    # 1000 records and a transaction's commit marker: the end offset is 1001, the last
    # record's offset 999; the end-of-partition event arrives at position 1001.
    active = {("t", 0), ("t", 1)}
    ends = {("t", 0): 1001, ("t", 1): 1001}
    _at_end(active, ends, cast(Message, _Eof("t", 0, 1000)))
    assert active == {("t", 0), ("t", 1)}
    _at_end(active, ends, cast(Message, _Eof("t", 0, 1001)))
    assert active == {("t", 1)}
    _at_end(active, ends, cast(Message, _Eof("t", 0, 1001)))  # again: nothing to do
    assert active == {("t", 1)}
