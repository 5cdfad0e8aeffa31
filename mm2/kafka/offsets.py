"""Partition offsets and partition counts of a cluster, as the pipeline's planner needs them."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping

from confluent_kafka import IsolationLevel, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._listoffsets import OffsetSpec

from mm2.kafka.failure import ClientWatch, classify

__all__ = ["OffsetLister"]

_RETRY_BACKOFF_S = 0.2
# A broker that restarted answers FENCED_LEADER_EPOCH to a client whose metadata still holds the
# old epoch, and librdkafka's admin client does not refresh it for ListOffsets: every later call
# failed the same way until mm2 restarted. A fresh client starts from fresh metadata.
_STALE_METADATA = frozenset(
    {
        KafkaError.FENCED_LEADER_EPOCH,
        KafkaError.UNKNOWN_LEADER_EPOCH,
        KafkaError.NOT_LEADER_FOR_PARTITION,
    }
)


class OffsetLister:
    """Asks one cluster for partition offsets, over one long-lived admin client."""

    def __init__(self, config: Mapping[str, str | int | bool], *, timeout: float = 10.0) -> None:
        self._watch = ClientWatch(config, window_s=timeout + 60)
        self._timeout = timeout
        self._admin = self._new_admin()

    def _new_admin(self) -> AdminClient:
        admin = AdminClient(self._watch.settings())
        self._watch.serve_with(admin.poll)
        return admin

    def offsets(
        self, partitions: Iterable[tuple[str, int]], *, latest: bool, read_committed: bool
    ) -> dict[tuple[str, int], int]:
        """Earliest or latest (last stable, when read_committed) offset of each partition.

        Outage answers (mm2.kafka.failure) are asked again until the timeout, then raised as a
        retriable KafkaClientError; authentication and authorization failures at once.
        """
        spec = OffsetSpec.latest() if latest else OffsetSpec.earliest()  # type: ignore[no-untyped-call]
        request = {TopicPartition(t, p): spec for t, p in partitions}
        if not request:
            return {}
        level = IsolationLevel.READ_COMMITTED if read_committed else IsolationLevel.READ_UNCOMMITTED
        deadline = time.monotonic() + self._timeout
        renewed = False
        while True:
            try:
                futures = self._admin.list_offsets(
                    request, isolation_level=level, request_timeout=self._timeout
                )
                return {(tp.topic, tp.partition): f.result().offset for tp, f in futures.items()}
            except KafkaException as exc:
                failure = classify(exc)
                if not failure.retriable or time.monotonic() + _RETRY_BACKOFF_S > deadline:
                    raise self._watch.error("listing offsets", exc) from exc
                error = exc.args[0] if exc.args else None
                stale = isinstance(error, KafkaError) and error.code() in _STALE_METADATA
                if stale and not renewed:
                    self._admin = self._new_admin()
                    renewed = True
                time.sleep(_RETRY_BACKOFF_S)
