"""W2's committed latency: when a read_committed reader of the target gets each record.

The append latency (target LogAppendTime - source timestamp) is when a record is on the target's
log, which is what a read_uncommitted reader can see. With exactly-once a read_committed reader
sees a record only once its transaction commits. CommittedReader is such a reader: a consumer
on the remote topic with isolation.level=read_committed, assigned to every partition from its
end before the paced producer starts, polling on its own thread. For each record carrying the
source-timestamp header it keeps the wall-clock time the record was handed to it minus that
header (the producer, the brokers and this reader share one machine and its clock).

The reader never waits to fill a batch: librdkafka's batch consume blocks until it has the
number asked for or its timeout passed, so `consume(5000, 0.05)` at 5,000 records/s held each
record up to 50 ms before the reader timed it (Apache MM2's committed p50 read 45 ms against
its append p50 of 9 ms). It reads with mm2.kafka.take: what is queued, without waiting, and
a wait for one record only when nothing is.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping

from confluent_kafka import OFFSET_END, Consumer, KafkaError, KafkaException, TopicPartition

from mm2.kafka.take import take

__all__ = ["COMMITTED_CONSUMER", "CommittedReader", "header_ms"]

COMMITTED_CONSUMER: dict[str, str | int | bool] = {
    "group.id": "mm2-bench-committed-latency",  # never joined or committed: assign() only
    "enable.auto.commit": False,
    "enable.partition.eof": False,
    "isolation.level": "read_committed",
    "fetch.min.bytes": 1,
    "fetch.wait.max.ms": 50,
    "max.partition.fetch.bytes": 1_048_576,
}
_BATCH = 5_000
_POLL_S = 0.05


Headers = Iterable[tuple[str, str | bytes | None]] | Mapping[str, str | bytes | None] | None


def header_ms(headers: Headers, name: str) -> int | None:
    """The big-endian integer in the header called name (the source timestamp), or None."""
    items = headers.items() if isinstance(headers, Mapping) else headers or ()
    for key, value in items:
        if key == name and isinstance(value, bytes):
            return int.from_bytes(value, "big")
    return None


class CommittedReader:
    """A read_committed consumer on its own thread, keeping receive time - header per record."""

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        starts: Mapping[int, int | None],
        header: str,
    ) -> None:
        """starts: partition -> the offset to read from (None: the end as the reader sees it)."""
        self.latencies_ms: list[int] = []
        self.error: str | None = None
        self._header = header
        self._stop = threading.Event()
        self._consumer = Consumer({"bootstrap.servers": bootstrap, **COMMITTED_CONSUMER})
        self._consumer.assign(
            [
                TopicPartition(topic, p, OFFSET_END if offset is None else offset)
                for p, offset in sorted(starts.items())
            ]
        )
        self._thread = threading.Thread(target=self._run, name="w2-committed-reader", daemon=True)

    def start(self) -> CommittedReader:
        self._thread.start()
        return self

    def __enter__(self) -> CommittedReader:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self._stop.set()  # on every way out, so the thread never outlives the workload
        self._thread.join(30)

    def _run(self) -> None:
        latencies = self.latencies_ms
        header = self._header
        try:
            while not self._stop.is_set():
                batch = take(self._consumer, _BATCH, _POLL_S)
                if not batch:
                    continue
                now_ms = int(time.time() * 1000)
                for msg in batch:
                    err = msg.error()
                    if err is not None:
                        if err.code() == KafkaError._PARTITION_EOF:
                            continue
                        if not err.retriable():
                            raise RuntimeError(f"read_committed reader: {err}")
                        continue
                    sent_ms = header_ms(msg.headers(), header)
                    if sent_ms is not None:
                        latencies.append(now_ms - sent_ms)
        except (KafkaException, RuntimeError) as exc:  # reported in the results
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            self._consumer.close()

    def finish(self, expected: int, deadline: float) -> list[int]:
        """Stop once expected records were seen or at deadline (time.monotonic()); latencies.

        The drain is judged on the target's end offsets, which move when records are appended;
        a read_committed reader gets the last ones when their transaction commits a moment
        later, so the reader goes on until it has them all, within the drain's own deadline.
        """
        while (
            len(self.latencies_ms) < expected
            and time.monotonic() < deadline
            and self._thread.is_alive()
        ):
            time.sleep(_POLL_S)
        self._stop.set()
        self._thread.join(30)
        return self.latencies_ms
