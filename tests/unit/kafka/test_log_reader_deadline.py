"""LogReader's deadline counts from the last record read: a long log is read to its end however
long it takes, a stalled one fails (no broker: the consumer and the batches are stand-ins)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from confluent_kafka import TopicPartition

import mm2.kafka.log_reader as log_reader
from mm2.errors import KafkaClientError
from mm2.kafka.failure import ClientWatch
from mm2.kafka.log_reader import LogReader


class _Message:
    def __init__(self, offset: int) -> None:
        self._offset = offset

    def error(self) -> None:
        return None

    def offset(self) -> int:
        return self._offset

    def timestamp(self) -> tuple[int, int]:
        return (1, 0)

    def key(self) -> bytes:
        return b"k"

    def value(self) -> bytes:
        return b"v"

    def headers(self) -> None:
        return None


class _Consumer:
    def __init__(self, reader: LogReader) -> None:
        self._reader = reader

    def position(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        return [TopicPartition("syncs", 0, self._reader.position)]


def _reader(end: int) -> LogReader:
    reader = LogReader.__new__(LogReader)
    reader.topic, reader.partition, reader.position = "syncs", 0, 0
    reader._watch = ClientWatch({})
    reader._consumer = _Consumer(reader)  # type: ignore[assignment]
    reader._watermarks = lambda timeout=10.0: (0, end)  # type: ignore[method-assign]
    return reader


def test_a_log_that_takes_longer_than_the_timeout_but_keeps_coming_is_read_to_its_end(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reader = _reader(end=20)

    def take(consumer: Any, n: int, wait: float) -> list[_Message]:
        time.sleep(0.03)  # 20 batches: 0.6 s in all, each well inside the 0.3 s timeout
        return [_Message(reader.position)]

    monkeypatch.setattr(log_reader, "take", take)
    records = reader.read_to_end(timeout=0.3)
    assert [r.offset for r in records] == list(range(20))


def test_a_log_that_stops_coming_fails_naming_where_it_stopped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reader = _reader(end=20)
    batches = iter([[_Message(0)], [_Message(1)]])

    def take(consumer: Any, n: int, wait: float) -> list[_Message]:
        time.sleep(0.01)
        return next(batches, [])

    monkeypatch.setattr(log_reader, "take", take)
    with pytest.raises(KafkaClientError, match=r"reading syncs-0 to offset 20 \(at 2\)"):
        reader.read_to_end(timeout=0.3)
