"""OffsetSync, Checkpoint and Heartbeat against Apache MM2's bytes (reference §2.2-2.4)."""

from __future__ import annotations

import struct
from typing import cast

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mm2.errors import RecordFormatError
from mm2.records import Checkpoint, Heartbeat, OffsetAndMetadata, OffsetSync, TopicPartition

INT32 = st.integers(min_value=-(2**31), max_value=2**31 - 1)
INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
# Kafka STRING is at most 32767 UTF-8 bytes; 8000 code points stay below that.
NAMES = st.text(alphabet=st.characters(codec="utf-8"), max_size=8000)


def h(text: str) -> bytes:
    return bytes.fromhex(text.replace(" ", ""))


# --- golden vectors -------------------------------------------------------------------------


def test_offset_sync_golden_bytes() -> None:
    sync = OffsetSync("topic1", 2, 3, 4)
    assert sync.to_key_bytes() == h("0006 746f70696331 00000002")
    assert sync.to_value_bytes() == h("0000000000000003 0000000000000004")
    assert len(sync.to_value_bytes()) == 16
    assert OffsetSync.from_record(sync.to_key_bytes(), sync.to_value_bytes()) == sync
    assert sync.topic_partition == TopicPartition("topic1", 2)


def test_checkpoint_golden_bytes() -> None:
    cp = Checkpoint("group9", "source1.topic1", 2, 10, 5, "")
    assert cp.to_key_bytes() == h("0006 67726f757039 000e 736f75726365312e746f70696331 00000002")
    assert cp.to_value_bytes() == h("0000 000000000000000a 0000000000000005 0000")
    assert Checkpoint.from_record(cp.to_key_bytes(), cp.to_value_bytes()) == cp
    assert cp.offset_and_metadata() == OffsetAndMetadata(5, "")
    assert cp.topic_partition == TopicPartition("source1.topic1", 2)


def test_heartbeat_golden_bytes() -> None:
    hb = Heartbeat("A", "B", 1_700_000_000_123)
    assert hb.to_key_bytes() == h("0001 41 0001 42")
    assert hb.to_value_bytes() == h("0000") + struct.pack(">q", 1_700_000_000_123)
    assert Heartbeat.from_record(hb.to_key_bytes(), hb.to_value_bytes()) == hb


def test_checkpoint_null_metadata_is_written_as_empty_string() -> None:
    cp = Checkpoint("g", "t", 0, 1, 2, cast(str, None))
    assert cp.metadata == ""
    assert cp.to_value_bytes().endswith(h("0000"))


def test_checkpoint_metadata_is_utf8_with_byte_length() -> None:
    cp = Checkpoint("g", "t", 0, 1, 2, "é")
    assert cp.to_value_bytes()[-4:] == h("0002 c3a9")


# --- round trips ----------------------------------------------------------------------------


@given(NAMES, INT32, INT64, INT64)
def test_offset_sync_round_trip(topic: str, partition: int, up: int, down: int) -> None:
    sync = OffsetSync(topic, partition, up, down)
    assert OffsetSync.from_record(sync.to_key_bytes(), sync.to_value_bytes()) == sync


@given(NAMES, NAMES, INT32, INT64, INT64, NAMES)
def test_checkpoint_round_trip(
    group: str, topic: str, partition: int, up: int, down: int, metadata: str
) -> None:
    cp = Checkpoint(group, topic, partition, up, down, metadata)
    assert Checkpoint.from_record(cp.to_key_bytes(), cp.to_value_bytes()) == cp


@given(NAMES, NAMES, INT64)
def test_heartbeat_round_trip(source: str, target: str, timestamp: int) -> None:
    hb = Heartbeat(source, target, timestamp)
    assert Heartbeat.from_record(hb.to_key_bytes(), hb.to_value_bytes()) == hb


# --- Java's lenient reading -------------------------------------------------------------------


def test_trailing_bytes_are_ignored() -> None:
    sync = OffsetSync("topic1", 2, 3, 4)
    assert (
        OffsetSync.from_record(sync.to_key_bytes() + b"xx", sync.to_value_bytes() + b"\0") == sync
    )
    cp = Checkpoint("group9", "source1.topic1", 2, 10, 5, "m")
    assert Checkpoint.from_record(cp.to_key_bytes() + b"x", cp.to_value_bytes() + b"yy") == cp
    hb = Heartbeat("A", "B", 7)
    assert Heartbeat.from_record(hb.to_key_bytes() + b"\1", hb.to_value_bytes() + b"\2") == hb


@pytest.mark.parametrize("version", [1, 7, -1])
def test_any_version_is_parsed_as_v0(version: int) -> None:
    cp = Checkpoint("group9", "source1.topic1", 2, 10, 5, "m")
    value = struct.pack(">h", version) + cp.to_value_bytes()[2:]
    assert Checkpoint.from_record(cp.to_key_bytes(), value) == cp
    hb = Heartbeat("A", "B", 7)
    assert (
        Heartbeat.from_record(hb.to_key_bytes(), struct.pack(">h", version) + h("00" * 7 + "07"))
        == hb
    )


def test_invalid_utf8_decodes_with_replacement_like_java() -> None:
    key = h("0002 ff41 00000000")
    sync = OffsetSync.from_record(key, OffsetSync("t", 0, 0, 0).to_value_bytes())
    assert sync.topic == "\ufffdA"


def test_lone_surrogate_encodes_as_question_mark_like_java() -> None:
    assert OffsetSync("a\ud800", 0, 0, 0).to_key_bytes()[:4] == h("0002 613f")


# --- malformed input ------------------------------------------------------------------------

SYNC = OffsetSync("topic1", 2, 3, 4)
CP = Checkpoint("group9", "source1.topic1", 2, 10, 5, "meta")
HB = Heartbeat("A", "B", 7)


@pytest.mark.parametrize("cut", range(12))
def test_offset_sync_short_key(cut: int) -> None:
    with pytest.raises(RecordFormatError):
        OffsetSync.from_record(SYNC.to_key_bytes()[:cut], SYNC.to_value_bytes())


@pytest.mark.parametrize("cut", range(16))
def test_offset_sync_short_value(cut: int) -> None:
    with pytest.raises(RecordFormatError, match="offset sync value"):
        OffsetSync.from_record(SYNC.to_key_bytes(), SYNC.to_value_bytes()[:cut])


@pytest.mark.parametrize("cut", range(len(CP.to_value_bytes())))
def test_checkpoint_short_value(cut: int) -> None:
    with pytest.raises(RecordFormatError, match="checkpoint value"):
        Checkpoint.from_record(CP.to_key_bytes(), CP.to_value_bytes()[:cut])


@pytest.mark.parametrize("cut", range(len(CP.to_key_bytes())))
def test_checkpoint_short_key(cut: int) -> None:
    with pytest.raises(RecordFormatError, match="checkpoint key"):
        Checkpoint.from_record(CP.to_key_bytes()[:cut], CP.to_value_bytes())


@pytest.mark.parametrize("cut", range(10))
def test_heartbeat_short_value(cut: int) -> None:
    with pytest.raises(RecordFormatError, match=r"heartbeat value: (version|timestamp)"):
        Heartbeat.from_record(HB.to_key_bytes(), HB.to_value_bytes()[:cut])


def test_negative_string_length_is_an_error() -> None:
    with pytest.raises(RecordFormatError, match="cannot be negative"):
        OffsetSync.from_record(h("ffff 00000000"), SYNC.to_value_bytes())
    with pytest.raises(RecordFormatError, match="cannot be negative"):
        Heartbeat.from_record(h("0001 41 8000"), HB.to_value_bytes())


def test_string_length_beyond_buffer_is_an_error() -> None:
    with pytest.raises(RecordFormatError, match="topic needs 16 bytes"):
        OffsetSync.from_record(h("0010 41 00000000"), SYNC.to_value_bytes())


def test_string_of_32767_bytes_is_accepted_and_32768_rejected() -> None:
    longest = OffsetSync("x" * 32767, 0, 0, 0)
    assert longest.to_key_bytes()[:2] == h("7fff")
    assert OffsetSync.from_record(longest.to_key_bytes(), longest.to_value_bytes()) == longest
    with pytest.raises(RecordFormatError, match="32768 is larger than the maximum"):
        OffsetSync("x" * 32768, 0, 0, 0).to_key_bytes()
    with pytest.raises(RecordFormatError, match="metadata"):
        Checkpoint("g", "t", 0, 0, 0, "é" * 16384).to_value_bytes()


def test_out_of_range_numbers_are_errors() -> None:
    with pytest.raises(RecordFormatError, match="partition"):
        OffsetSync("t", 2**31, 0, 0).to_key_bytes()
    with pytest.raises(RecordFormatError, match="upstreamOffset"):
        OffsetSync("t", 0, 2**63, 0).to_value_bytes()
    with pytest.raises(RecordFormatError, match="timestamp"):
        Heartbeat("A", "B", -(2**63) - 1).to_value_bytes()


def test_record_format_error_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        OffsetSync.from_record(b"", b"")


def test_records_are_frozen() -> None:
    with pytest.raises(AttributeError):
        SYNC.topic = "other"  # type: ignore[misc]
