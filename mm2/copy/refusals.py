"""What a record the target refused means: a person's to fix, or a batch to copy again.

A refusal that trying again cannot change (an ACL, a timestamp outside the remote topic's
limits, a policy, a record larger than its topic accepts) ends the copy task with an error that
names the record (topic-partition@offset), the remote topic and the broker's reason; the loop
(mm2.copy.loop) copies anything else again from the last commit.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime

from confluent_kafka import KafkaError

from mm2.copy.spec import CopyTaskSpec
from mm2.copy.stats import CopyStats
from mm2.errors import KafkaClientError, RecordRefusedError, RecordTooLargeError
from mm2.kafka.failure import classify, client_error

__all__ = ["Refused", "Retries", "operators_fault", "oversized", "too_large_by_itself"]

# (what was copied of the partition, the record's source offset, the error, key + value bytes,
# its timestamp in ms or -1)
Refused = tuple[CopyStats, int, KafkaError, int, int]

_TIMESTAMP_WINDOW = (
    "the remote topic's message.timestamp.before.max.ms / message.timestamp.after.max.ms refuse "
    "records outside their window (the config sync copies them from the source topic)"
)


def _hint(err: KafkaError, timestamp: int) -> str:
    """What the broker's code may mean for this record: librdkafka hands over the code, not the
    broker's message, and Kafka 4 answers a timestamp out of range with INVALID_RECORD."""
    if err.code() not in (KafkaError.INVALID_TIMESTAMP, KafkaError.INVALID_RECORD):
        return ""
    stamp = ""
    if timestamp >= 0:
        when = datetime.fromtimestamp(timestamp / 1000, tz=UTC)
        age = time.time() - timestamp / 1000
        stamp = f"its timestamp is {when:%Y-%m-%dT%H:%M:%S}Z, {age:,.0f} s old; "
    null_key = (
        ""
        if err.code() == KafkaError.INVALID_TIMESTAMP
        else "; a compacted remote topic refuses a null key"
    )
    return f" ({stamp}{_TIMESTAMP_WINDOW}{null_key})"


def too_large_by_itself(spec: CopyTaskSpec, stats: CopyStats, size: int) -> bool:
    """Whether a record refused as too large is so by itself: larger than its remote topic's
    max.message.bytes, or the limit unknown. A smaller one was refused with its batch (the
    producer's bound was higher than the topic accepts): copied again, never skipped."""
    limit = spec.topic_limits.get(stats.target_topic)
    return limit is None or size > limit


def operators_fault(
    spec: CopyTaskSpec, refused: list[Refused], cluster: str
) -> KafkaClientError | None:
    """The error that ends the task for the first refusal only a person can fix, if any."""
    for stats, up, err, size, timestamp in refused:
        failure = classify(err)
        where = f"record {stats.topic}-{stats.partition}@{up}"
        if failure.kind == "record-too-large":
            if spec.settings.skip_oversized_records or not too_large_by_itself(spec, stats, size):
                continue
            limit = spec.topic_limits.get(stats.target_topic)
            accepts = f"{limit} bytes" if limit is not None else "what it accepts"
            return RecordTooLargeError(
                f"{where} ({size} bytes) is larger than {stats.target_topic} on the target "
                f"accepts ({accepts}; broker: {failure.detail}); raise the target topic's "
                "max.message.bytes, or set skip.oversized.records=true to skip such "
                "records (they are counted and logged)"
            )
        if failure.kind == "refused":
            return RecordRefusedError(
                f"the target refused {where} for {stats.target_topic}: {failure.detail}"
                f"{_hint(err, timestamp)}; the copy task stopped: fix the remote topic or the "
                "record, then restart the connector"
            )
        if failure.kind in ("authorization", "authentication"):
            return client_error(f"producing {where} to {stats.target_topic}", err, cluster=cluster)
    return None


def oversized(spec: CopyTaskSpec, refused: list[Refused]) -> list[tuple[str, int, int]]:
    """The records refused as too large by themselves, as (topic, partition, offset)."""
    return [
        (stats.topic, stats.partition, up)
        for stats, up, err, size, _ in refused
        if classify(err).kind == "record-too-large" and too_large_by_itself(spec, stats, size)
    ]


class Retries:
    """Transactions aborted one after the other: how long to wait before copying again
    (doubling from `first` to `cap`), and when to stop: a copy task that has committed nothing
    for `give_up_s` ends with a retriable error, which its runner shows as RESTARTING with the
    cause and restarts with backoff. So a copy task never loops while shown RUNNING."""

    def __init__(
        self,
        where: str,
        *,
        first: float = 0.1,
        cap: float = 5.0,
        give_up_s: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._where = where
        self._first, self._cap, self._give_up = first, cap, give_up_s
        self._clock = clock
        self._since: float | None = None
        self._wait = first

    def succeeded(self) -> None:
        self._since, self._wait = None, self._first

    def failed(self, cause: str) -> float:
        """The wait before copying again; raises when failing for longer than give_up_s."""
        now = self._clock()
        if self._since is None:
            self._since = now
        elif now - self._since > self._give_up:
            raise KafkaClientError(
                f"{self._where}: nothing committed for {now - self._since:.0f} s; last: {cause}",
                retriable=True,
            )
        wait, self._wait = self._wait, min(self._wait * 2, self._cap)
        return wait
