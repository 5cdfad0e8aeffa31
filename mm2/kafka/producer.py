"""A producer for MM2's internal records (heartbeats, offset syncs, checkpoints)."""

from __future__ import annotations

from collections.abc import Mapping

from confluent_kafka import KafkaError, Message, Producer

from mm2.errors import KafkaClientError

__all__ = ["RecordProducer"]


class RecordProducer:
    """Sends small records and remembers the first delivery failure until `raise_failure()`."""

    def __init__(self, config: Mapping[str, str | int | bool]) -> None:
        self._producer = Producer({"acks": "all", "enable.idempotence": True, **config})
        self._failure: str | None = None

    def _delivered(self, err: KafkaError | None, msg: Message) -> None:
        if err is not None and self._failure is None:
            self._failure = f"delivery to {msg.topic()}-{msg.partition()} failed: {err.str()}"

    def send(
        self,
        topic: str,
        key: bytes,
        value: bytes,
        *,
        partition: int = 0,
        timestamp: int | None = None,
        headers: Mapping[str, bytes] | None = None,
    ) -> None:
        try:
            self._producer.produce(
                topic,
                value=value,
                key=key,
                partition=partition,
                timestamp=timestamp or 0,
                headers=dict(headers) if headers else None,
                on_delivery=self._delivered,
            )
        except BufferError as exc:
            raise KafkaClientError(f"producer queue full for {topic}", retriable=True) from exc
        self._producer.poll(0)

    def flush(self, timeout: float = 30.0) -> None:
        """Wait for every send; raise a retriable error if any failed or did not finish."""
        remaining = self._producer.flush(timeout)
        if remaining:
            raise KafkaClientError(
                f"{remaining} records not acknowledged within {timeout:.0f} s", retriable=True
            )
        self.raise_failure()

    def raise_failure(self) -> None:
        failure, self._failure = self._failure, None
        if failure is not None:
            raise KafkaClientError(failure, retriable=True)
