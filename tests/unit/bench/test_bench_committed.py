"""bench.committed: the source timestamp read back from a record's headers."""

from __future__ import annotations

from bench.committed import COMMITTED_CONSUMER, header_ms
from bench.steady import SOURCE_TS


def test_header_ms_reads_the_big_endian_timestamp() -> None:
    ts = 1_764_000_000_123
    headers: list[tuple[str, str | bytes | None]] = [
        ("other", b"x"),
        (SOURCE_TS, ts.to_bytes(8, "big")),
    ]
    assert header_ms(headers, SOURCE_TS) == ts


def test_header_ms_none_without_the_header_or_its_bytes() -> None:
    assert header_ms(None, SOURCE_TS) is None
    assert header_ms([], SOURCE_TS) is None
    assert header_ms([("bench-warm-up", b"1")], SOURCE_TS) is None
    assert header_ms([(SOURCE_TS, None)], SOURCE_TS) is None


def test_the_reader_sees_committed_records_only() -> None:
    assert COMMITTED_CONSUMER["isolation.level"] == "read_committed"
    assert COMMITTED_CONSUMER["enable.auto.commit"] is False


def test_header_ms_takes_headers_as_a_mapping_too() -> None:
    assert header_ms({SOURCE_TS: (42).to_bytes(8, "big")}, SOURCE_TS) == 42
