"""A producer for MM2's internal records (heartbeats, offset syncs, checkpoints)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Protocol

from confluent_kafka import KafkaError, Message, Producer

from mm2.kafka.failure import ClientWatch

log = logging.getLogger(__name__)

__all__ = ["STALLED_S", "RecordProducer", "WireRecord"]

# A producer that has had records waiting this long without one acknowledgement is given up:
# a client told "no leader" while a broker stopped can keep the partition so for good
# (librdkafka issue 5430), and only a new client sends again.
STALLED_S = 60.0


class WireRecord(Protocol):
    """A record in Apache MM2's wire format (mm2.records: Heartbeat, Checkpoint, OffsetSync)."""

    def to_key_bytes(self) -> bytes: ...

    def to_value_bytes(self) -> bytes: ...


class RecordProducer:
    """Sends small records and remembers the first delivery failure until `raise_failure()`."""

    def __init__(self, config: Mapping[str, str | int | bool]) -> None:
        self._watch = ClientWatch(config)
        self._producer = Producer(self._watch.settings({"acks": "all", "enable.idempotence": True}))
        self._watch.serve_with(self._producer.poll)
        self._failure: tuple[str, KafkaError] | None = None
        self._progress = time.monotonic()  # the last acknowledgement, or nothing waiting
        self._waiting = 0  # records sent, neither acknowledged nor failed yet

    def _delivered(self, err: KafkaError | None, msg: Message) -> None:
        self._waiting -= 1
        if err is None:
            self._progress = time.monotonic()
        elif self._failure is None:
            self._failure = (f"delivering to {msg.topic()}-{msg.partition()}", err)

    def _acknowledged(
        self, on_ack: Callable[[], None]
    ) -> Callable[[KafkaError | None, Message], None]:
        def delivered(err: KafkaError | None, msg: Message) -> None:
            self._delivered(err, msg)
            if err is None:
                on_ack()

        return delivered

    def send(
        self,
        topic: str,
        key: bytes,
        value: bytes,
        *,
        partition: int = 0,
        timestamp: int | None = None,
        headers: Mapping[str, bytes] | None = None,
        on_ack: Callable[[], None] | None = None,
    ) -> None:
        """Send one record; `on_ack` is called (from a later poll or flush) once the cluster
        acknowledged it."""
        try:
            self._producer.produce(
                topic,
                value=value,
                key=key,
                partition=partition,
                timestamp=timestamp or 0,
                headers=dict(headers) if headers else None,
                on_delivery=self._delivered if on_ack is None else self._acknowledged(on_ack),
            )
        except BufferError as exc:
            raise self._watch.error(f"sending to {topic}", exc) from exc
        self._waiting += 1
        self._producer.poll(0)

    def send_record(
        self,
        topic: str,
        record: WireRecord,
        *,
        timestamp: int | None = None,
        headers: Mapping[str, bytes] | None = None,
        on_ack: Callable[[], None] | None = None,
    ) -> None:
        """Send an MM2 record, encoded as Apache MM2 does, to the topic's one partition (0)."""
        key, value = record.to_key_bytes(), record.to_value_bytes()
        self.send(topic, key, value, timestamp=timestamp, headers=headers, on_ack=on_ack)

    def flush(self, timeout: float = 30.0) -> None:
        """Wait for every send; raise an error (retriable for an outage) if any failed or did
        not finish."""
        remaining = self._producer.flush(timeout)
        if remaining:
            raise self._watch.error(
                f"waiting {timeout:.0f} s for {remaining} records to be acknowledged",
                TimeoutError(),
            )
        self.raise_failure()

    def raise_failure(self) -> None:
        """The first delivery failure since the last call, or a stall: records waiting for
        STALLED_S without an acknowledgement (an error that asks for a new producer)."""
        failure, self._failure = self._failure, None
        if failure is not None:
            raise self._watch.error(*failure)
        now, waiting = time.monotonic(), self._waiting
        if not waiting:
            self._progress = now
        elif now - self._progress > STALLED_S:
            self._progress = now  # once per stall
            raise self._watch.error(
                f"{waiting} records waiting {STALLED_S:.0f} s without an acknowledgement (a "
                "client told 'no leader' while a broker stopped can stay so, librdkafka issue "
                "5430): a new producer is needed",
                TimeoutError(),
            )

    def close(self, timeout: float = 2.0) -> None:
        """Deliver what can be delivered within `timeout` (a task's stop must stay short even
        with the cluster down); what is left is logged, not raised."""
        remaining = self._producer.flush(timeout)
        if remaining:
            log.warning(
                "%s: %d records not acknowledged within %.0f s, dropped on close",
                self._watch.cluster,
                remaining,
                timeout,
            )
