"""Partition offsets and partition counts of a cluster, as the pipeline's planner needs them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from confluent_kafka import IsolationLevel, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._listoffsets import OffsetSpec

from mm2.errors import KafkaClientError

__all__ = ["OffsetLister"]


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
        try:
            futures = self._admin.list_offsets(
                request, isolation_level=level, request_timeout=self._timeout
            )
            return {(tp.topic, tp.partition): f.result().offset for tp, f in futures.items()}
        except KafkaException as exc:
            raise KafkaClientError(f"listing offsets failed: {exc}", retriable=True) from exc
