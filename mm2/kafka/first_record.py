"""FirstRecordProbe: where a consumer positioned at an offset reads its next record.

On a compacted topic most offsets hold no record: a group committed at one of them reads the
first record the log still holds after it. The probe finds that record by reading, as the
mirror reads (its consumer settings, so its isolation level), from the offset itself.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from mm2.kafka.failure import ClientWatch
from mm2.kafka.take import take

__all__ = ["FirstRecordProbe"]

log = logging.getLogger(__name__)

_CACHE_LIMIT = 10_000


class FirstRecordProbe:
    """The offset of the first record a partition holds at or after a given offset.

    Answers None whenever it cannot say for sure: the offset is below the log start (a group
    committed there would be reset by its own `auto.offset.reset`, not read on), at or past
    the end, the partition did not answer in time, or any error. Answers are kept for
    `max_age` seconds: a group parked at one offset is asked about on every checkpoint pass.
    """

    def __init__(
        self,
        config: Mapping[str, str | int | bool],
        *,
        group: str,
        timeout: float = 5.0,
        max_age: float = 30.0,
    ) -> None:
        settings: dict[str, str | int | float | bool] = {
            "isolation.level": "read_committed",
            **config,
            "group.id": group,
            "enable.auto.commit": False,
            # Never jump elsewhere: an offset out of range is an error, and no answer.
            "auto.offset.reset": "error",
            "fetch.max.bytes": 1 << 20,
            "max.partition.fetch.bytes": 256 << 10,
        }
        self._consumer = Consumer(ClientWatch(settings).settings())
        self._timeout = timeout
        self._max_age = max_age
        self._cache: dict[tuple[str, int, int], tuple[float, int | None]] = {}

    def first_at_or_after(self, topic: str, partition: int, offset: int) -> int | None:
        key = (topic, partition, offset)
        now = time.monotonic()
        cached = self._cache.get(key)
        if cached is not None and now - cached[0] < self._max_age:
            return cached[1]
        try:
            found = self._read(topic, partition, offset)
        except KafkaException as exc:
            log.debug("first record of %s-%d at or after %d: %s", topic, partition, offset, exc)
            found = None
        if len(self._cache) >= _CACHE_LIMIT:
            self._cache.clear()
        self._cache[key] = (now, found)
        return found

    def _read(self, topic: str, partition: int, offset: int) -> int | None:
        low, high = self._consumer.get_watermark_offsets(
            TopicPartition(topic, partition), timeout=self._timeout
        )
        if offset < low or offset >= high:
            return None
        self._consumer.assign([TopicPartition(topic, partition, offset)])
        try:
            deadline = time.monotonic() + self._timeout
            while time.monotonic() < deadline:
                for msg in take(self._consumer, 100, 0.2):
                    err = msg.error()
                    if err is not None:
                        if err.code() == KafkaError._PARTITION_EOF:
                            continue
                        log.debug("reading %s-%d from %d: %s", topic, partition, offset, err)
                        return None
                    at = msg.offset()
                    if at is not None and at >= offset:
                        return at
            return None
        finally:
            self._consumer.unassign()

    def close(self) -> None:
        self._consumer.close()
