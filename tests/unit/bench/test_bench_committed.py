"""bench.committed: the source timestamp read back from a record's headers."""

from __future__ import annotations

import time
from typing import Any

import pytest

import bench.committed
from bench.committed import COMMITTED_CONSUMER, CommittedReader, header_ms
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


class _Record:
    def __init__(self, sent_ms: int) -> None:
        self._headers = [(SOURCE_TS, sent_ms.to_bytes(8, "big"))]

    def error(self) -> None:
        return None

    def headers(self) -> list[tuple[str, bytes]]:
        return self._headers


class _Consumer:
    """Hands over one queued record per call, as librdkafka's queue would; every call kept."""

    def __init__(self, *_args: Any) -> None:
        self.calls: list[tuple[int, float]] = []
        self.queued = [_Record(int(time.time() * 1000)) for _ in range(3)]

    def assign(self, _partitions: object) -> None:
        pass

    def consume(self, num_messages: int, timeout: float) -> list[_Record]:
        self.calls.append((num_messages, timeout))
        if not self.queued:
            time.sleep(timeout)  # nothing queued: the whole timeout
            return []
        return [self.queued.pop(0)]

    def close(self) -> None:
        pass


def test_the_reader_never_blocks_to_fill_a_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[_Consumer] = []

    def consumer(_conf: object) -> _Consumer:
        made.append(_Consumer())
        return made[-1]

    monkeypatch.setattr(bench.committed, "Consumer", consumer)
    with CommittedReader("b:9092", "t", {0: None}, SOURCE_TS) as reader:
        latencies = reader.finish(3, time.monotonic() + 10)
    assert len(latencies) == 3
    # A call that may wait asks for one record: it returns as soon as one is there. The
    # larger batch is taken only from what is queued already, without waiting.
    assert all(n == 1 for n, timeout in made[0].calls if timeout > 0)
    assert any(n > 1 and timeout == 0 for n, timeout in made[0].calls)
