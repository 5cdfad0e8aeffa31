"""Partition offsets and partition counts of a cluster, as the pipeline's planner needs them."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping

from confluent_kafka import IsolationLevel, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._listoffsets import OffsetSpec

from mm2.errors import KafkaClientError

__all__ = ["OffsetLister"]

_RETRY_BACKOFF_S = 0.2
# Answers that pass: a partition whose leader is not known yet (just created, or moving), or a
# broker that was slow or briefly unreachable. librdkafka does not mark these retriable in
# ListOffsets results, so the codes are named here.
_TRANSIENT = frozenset(
    {
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.UNKNOWN_TOPIC_OR_PART,
        KafkaError.NOT_ENOUGH_REPLICAS,
        KafkaError.REQUEST_TIMED_OUT,
        KafkaError._TIMED_OUT,
        KafkaError._TRANSPORT,
    }
)


class OffsetLister:
    """Asks one cluster for partition offsets, over one long-lived admin client."""

    def __init__(self, config: Mapping[str, str | int | bool], *, timeout: float = 10.0) -> None:
        self._admin = AdminClient(dict(config))
        self._timeout = timeout

    def offsets(
        self, partitions: Iterable[tuple[str, int]], *, latest: bool, read_committed: bool
    ) -> dict[tuple[str, int], int]:
        """Earliest or latest (last stable, when read_committed) offset of each partition."""
        spec = OffsetSpec.latest() if latest else OffsetSpec.earliest()  # type: ignore[no-untyped-call]
        request = {TopicPartition(t, p): spec for t, p in partitions}
        if not request:
            return {}
        level = IsolationLevel.READ_COMMITTED if read_committed else IsolationLevel.READ_UNCOMMITTED
        # Transient answers are asked again until the timeout.
        deadline = time.monotonic() + self._timeout
        while True:
            try:
                futures = self._admin.list_offsets(
                    request, isolation_level=level, request_timeout=self._timeout
                )
                return {(tp.topic, tp.partition): f.result().offset for tp, f in futures.items()}
            except KafkaException as exc:
                error = exc.args[0] if exc.args else None
                again = isinstance(error, KafkaError) and (
                    error.retriable() or error.code() in _TRANSIENT
                )
                if not again or time.monotonic() + _RETRY_BACKOFF_S > deadline:
                    # Still retriable for the task: its runner restarts it with backoff.
                    raise KafkaClientError(
                        f"listing offsets failed: {exc}", retriable=True
                    ) from exc
                time.sleep(_RETRY_BACKOFF_S)
