"""LogReader: read one partition of an internal topic (offset syncs, checkpoints) to its end."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    TopicPartition,
)

from mm2.kafka.failure import ClientWatch
from mm2.kafka.take import take

__all__ = ["LogReader", "LogRecord", "RecordCounter", "TimestampProbe"]


@dataclass(frozen=True)
class LogRecord:
    offset: int
    key: bytes | None
    value: bytes | None
    headers: dict[str, bytes]
    timestamp: int


def _headers(raw: object) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    if isinstance(raw, list):
        for name, value in raw:
            out[str(name)] = value if isinstance(value, bytes) else b""
    return out


class LogReader:
    """A long-lived consumer assigned to `topic`-`partition`; each call reads up to the end."""

    def __init__(
        self,
        config: Mapping[str, str | int | bool],
        topic: str,
        *,
        partition: int = 0,
        start: int | None = None,
    ) -> None:
        self.topic = topic
        self.partition = partition
        # No serve_with: a consumer serves error_cb only in consume(), which read_to_end calls.
        self._watch = ClientWatch(config)
        defaults: dict[str, str | int | float | bool] = {
            "group.id": f"mm2-log-reader-{topic}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
        self._settings = self._watch.settings(defaults)
        self.position = OFFSET_BEGINNING if start is None else start
        self._consumer = self._open()

    def _open(self) -> Consumer:
        consumer = Consumer(self._settings)
        consumer.assign([TopicPartition(self.topic, self.partition, self.position)])
        return consumer

    def _watermarks(self, timeout: float = 10.0) -> tuple[int, int]:
        try:
            low, high = self._consumer.get_watermark_offsets(
                TopicPartition(self.topic, self.partition), timeout=timeout
            )
        except KafkaException as exc:
            if exc.args[0].code() == KafkaError._UNKNOWN_PARTITION:
                # A client told "no leader" while the broker stopped can keep the partition
                # unknown for good (librdkafka issue 5430): the next read has a new one.
                self._consumer.close()
                self._consumer = self._open()
            raise self._watch.error(
                f"reading the end of {self.topic}-{self.partition}", exc
            ) from exc
        return int(low), int(high)

    def end_offset(self, timeout: float = 10.0) -> int:
        return self._watermarks(timeout)[1]

    def read_to_end(self, timeout: float = 30.0) -> list[LogRecord]:
        """Every record from the current position up to the end offset seen at the call;
        raises once `timeout` seconds pass without a record (a long log takes as long as it
        reads, a stalled one fails: e.g. held at a transaction left open)."""
        return [record for batch in self.read_batches(timeout) for record in batch]

    def read_batches(self, timeout: float = 30.0) -> Iterator[list[LogRecord]]:
        """read_to_end a batch at a time, for a caller that keeps only some of a long log."""
        low, end = self._watermarks()
        if self.position < 0 and low >= end:
            self.position = end  # an empty log: nothing to read yet
        deadline = time.monotonic() + timeout
        while self.position < end:  # OFFSET_BEGINNING is negative
            if time.monotonic() > deadline:
                raise self._watch.error(
                    f"reading {self.topic}-{self.partition} to offset {end} (at {self.position})",
                    TimeoutError(),
                )
            messages = take(self._consumer, 10_000, 0.2)
            records = self._take(messages)
            if records:
                deadline = time.monotonic() + timeout
            yield records
            if not messages:
                # Compacted-away offsets and transaction markers: the position moves past them.
                (tp,) = self._consumer.position([TopicPartition(self.topic, self.partition)])
                if tp.offset > self.position:
                    self.position = tp.offset

    def skip_to_last(self, records: int) -> None:
        """Start the next read at most `records` offsets before the end: a long log's tail."""
        low, end = self._watermarks()
        start = max(low, end - records)
        if start > self.position:
            self.position = start
            self._consumer.assign([TopicPartition(self.topic, self.partition, start)])

    def read_new(self) -> list[LogRecord]:
        """The records the consumer fetched since the last read, without asking the broker
        for the end (no round trip: the consumer keeps fetching in the background, and a
        fetch waiting at the end returns as soon as a record arrives)."""
        return self._take(self._consumer.consume(10_000, 0))

    def _take(self, messages: list[Message]) -> list[LogRecord]:
        out = []
        for msg in messages:
            err = msg.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    continue
                raise self._watch.error(f"reading {self.topic}-{self.partition}", err)
            offset = msg.offset() or 0
            _, ts = msg.timestamp()
            out.append(LogRecord(offset, msg.key(), msg.value(), _headers(msg.headers()), ts))
            self.position = offset + 1
        return out

    def close(self) -> None:
        self._consumer.close()


class RecordCounter:
    """Counts the records a read_committed reader sees in some topics, as they arrive.

    End offsets overcount a transactional topic (every commit marker takes an offset), so
    records are read and counted.
    """

    def __init__(
        self, config: Mapping[str, str | int | bool], *, header: tuple[str, bytes] | None = None
    ) -> None:
        """`header`: count only the records that carry this header with this value."""
        self._header = header
        self._consumer = Consumer(
            {
                "group.id": "mm2-record-counter",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "isolation.level": "read_committed",
                **config,
            }
        )
        self._assigned: set[tuple[str, int]] = set()
        self.counts: dict[str, int] = {}

    def count(self, partitions: list[tuple[str, int]], timeout: float = 0.2) -> dict[str, int]:
        """Records seen so far per topic, after reading what has arrived in `partitions`."""
        new = [tp for tp in partitions if tp not in self._assigned]
        if new:
            self._consumer.incremental_assign(
                [TopicPartition(t, p, OFFSET_BEGINNING) for t, p in new]
            )
            self._assigned.update(new)
        while True:
            messages = take(self._consumer, 10_000, timeout)
            for msg in messages:
                if msg.error() is None and self._wanted(msg.headers()):
                    topic = msg.topic() or ""
                    self.counts[topic] = self.counts.get(topic, 0) + 1
            if len(messages) < 10_000:
                return dict(self.counts)

    def _wanted(self, headers: object) -> bool:
        if self._header is None:
            return True
        name, value = self._header
        return _headers(headers).get(name) == value

    def close(self) -> None:
        self._consumer.close()


class TimestampProbe:
    """Reads the timestamp of the record at given offsets (one record per partition), over one
    long-lived consumer: how old the oldest record a mirror has not copied yet is."""

    def __init__(self, config: Mapping[str, str | int | bool], *, group: str) -> None:
        settings: dict[str, str | int | float | bool] = {
            **config,
            "group.id": group,
            "enable.auto.commit": False,
            "fetch.max.bytes": 1 << 20,
            "max.partition.fetch.bytes": 16 << 10,
        }
        self._consumer = Consumer(ClientWatch(settings).settings())

    def timestamps(
        self, offsets: Mapping[tuple[str, int], int], *, timeout: float = 2.0
    ) -> dict[tuple[str, int], int]:
        """Timestamp (ms) of the record at each offset, for the partitions that answered in
        time (best effort: a partition left out simply has no age this time)."""
        found: dict[tuple[str, int], int] = {}
        if not offsets:
            return found
        try:
            self._consumer.assign([TopicPartition(t, p, o) for (t, p), o in offsets.items()])
            deadline = time.monotonic() + timeout
            while len(found) < len(offsets) and time.monotonic() < deadline:
                for msg in take(self._consumer, 500, 0.2):
                    if msg.error() is None:
                        tp = (msg.topic() or "", msg.partition() or 0)
                        found.setdefault(tp, msg.timestamp()[1])
            self._consumer.unassign()
        except KafkaException:
            pass
        return found

    def close(self) -> None:
        self._consumer.close()
