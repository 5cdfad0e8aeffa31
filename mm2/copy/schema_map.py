"""The schema-ID map a copy task rewrites with, read from the flow's offsets topic.

The flow's schema connector registers each source schema on the target and, where the target
registry gave it another ID, writes a mapping record to the offsets topic on the target
(mm2.records.schema_ids: keyed like Connect's offsets, so the topic's compaction keeps the
newest per source ID). A copy task reads every partition of that topic once to its end before
it copies (`catch_up`), so a restart or a standby starts from the whole map instead of holding
every partition until the connector writes it again, and then takes what arrives between two
rounds (`poll`), which is what lets a partition held for an unmapped ID go on.

It reads read_committed, like every reader of positions: a mapping counts once it is
committed. The end of a partition is where librdkafka says end-of-partition (for a
read_committed consumer, the last stable offset), so catching up costs no ListOffsets round
trip per partition. The consumer is injected (`open` builds the real one), so a fake of four
methods drives the unit tests.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    TopicPartition,
)

from mm2.copy.schema_ids import SchemaIdRewriter
from mm2.errors import KafkaClientError, RecordFormatError
from mm2.kafka.failure import ClientLog, client_error, cluster_label, ends_a_consumer
from mm2.records.schema_ids import SchemaIdMapping, SchemaSubject, decode_schema_record

__all__ = ["MapConsumer", "MapRecord", "SchemaIdFeed"]

log = logging.getLogger(__name__)

_BATCH = 10_000


class MapRecord(Protocol):
    """What the feed reads of a consumed record (confluent_kafka.Message has it)."""

    def error(self) -> KafkaError | None: ...
    def partition(self) -> int | None: ...
    def offset(self) -> int | None: ...
    def key(self) -> bytes | None: ...
    def value(self) -> bytes | None: ...


class MapConsumer(Protocol):
    """The calls the feed makes of its consumer (confluent_kafka.Consumer has them)."""

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> Any: ...
    def incremental_assign(self, partitions: list[TopicPartition]) -> None: ...
    def consume(self, num_messages: int = 1, timeout: float = -1) -> Sequence[MapRecord]: ...
    def close(self) -> None: ...


class SchemaIdFeed:
    """Reads the mappings of one source cluster (`cluster`, its alias) from `topic` into
    `rewriter`, newest record of a source ID last and so winning."""

    def __init__(
        self,
        consumer: MapConsumer,
        topic: str,
        *,
        cluster: str,
        rewriter: SchemaIdRewriter | None = None,
    ) -> None:
        self.topic = topic
        self.rewriter = rewriter if rewriter is not None else SchemaIdRewriter()
        self._cluster = cluster
        self._consumer = consumer
        self._partitions: set[int] = set()
        self.passes = 0  # the schema connector's finished passes over the source registry
        # Partitions read to their end, as the consumer last said; one record more takes a
        # partition out until its next end-of-partition.
        self._at_end: set[int] = set()

    @classmethod
    def open(
        cls,
        consumer_config: Mapping[str, str],
        topic: str,
        *,
        flow: str,
        cluster: str,
        rewriter: SchemaIdRewriter | None = None,
    ) -> SchemaIdFeed:
        """A feed on a real consumer of the offsets topic (CopyTaskSpec.offsets_consumer)."""
        consumer = Consumer(
            {
                "group.id": f"mm2-schema-ids-{flow}",
                **consumer_config,
                "enable.auto.commit": False,
                "enable.partition.eof": True,
                "isolation.level": "read_committed",
                # End-of-partition comes with a fetch's answer: at the broker's default 500 ms
                # wait, each catch-up would take half a second more (as in PositionsReader).
                "fetch.wait.max.ms": 50,
                "logger": ClientLog(cluster_label(consumer_config)),
            }
        )
        return cls(consumer, topic, cluster=cluster, rewriter=rewriter)

    def catch_up(self, timeout: float = 30.0) -> int:
        """Read every partition of the topic to its end; returns the mappings taken. Raises
        KafkaClientError naming the topic when it cannot be read within `timeout`."""
        started = time.monotonic()
        deadline = started + timeout
        self._assign(timeout)
        waiting = self._partitions - self._at_end
        taken = 0
        while waiting:
            if time.monotonic() > deadline:
                raise KafkaClientError(
                    f"reading the schema-ID map from {self.topic} timed out after "
                    f"{timeout:g} s: partition(s) {', '.join(map(str, sorted(waiting)))} not "
                    "read to their end; if this lasts, a transaction nobody ends may hold them "
                    "(kafka-transactions.sh find-hanging, docs/operations.md)",
                    retriable=True,
                )
            count, ended = self._consume(min(0.2, max(deadline - time.monotonic(), 0)))
            taken += count
            waiting -= ended
        ids, guids = len(self.rewriter.ids), len(self.rewriter.guids)
        log.info(
            "schema-ID map of %s read from %s: %d ID(s), %d GUID(s) in %.1f s",
            self._cluster,
            self.topic,
            ids,
            guids,
            time.monotonic() - started,
        )
        return taken

    def poll(self) -> int:
        """Take the mappings that have arrived since; does not wait. Returns how many."""
        return self._consume(0)[0]

    def close(self) -> None:
        self._consumer.close()

    def _assign(self, timeout: float) -> None:
        try:
            meta = self._consumer.list_topics(self.topic, timeout=min(timeout, 10.0))
        except KafkaException as exc:  # judged like every Kafka error: credentials end it
            raise client_error(f"reading the schema-ID map from {self.topic}", exc) from exc
        info = meta.topics.get(self.topic)
        if info is None or info.error is not None:
            why = "not found" if info is None else info.error
            raise KafkaClientError(
                f"reading the schema-ID map: {self.topic} is not readable ({why})",
                retriable=True,
            )
        new = sorted(set(info.partitions) - self._partitions)
        if new:
            self._consumer.incremental_assign(
                [TopicPartition(self.topic, p, OFFSET_BEGINNING) for p in new]
            )
            self._partitions.update(new)

    def _consume(self, timeout: float) -> tuple[int, set[int]]:
        """The mappings taken from one batch, and the partitions it read to their end."""
        taken = 0
        ended: set[int] = set()
        for msg in self._consumer.consume(_BATCH, timeout):
            partition = msg.partition() or 0
            err = msg.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    ended.add(partition)
                    self._at_end.add(partition)
                elif ends_a_consumer(err):
                    raise client_error(f"reading the schema-ID map from {self.topic}", err)
                continue  # anything else is transient: librdkafka retries by itself
            self._at_end.discard(partition)
            if self._take(msg):
                taken += 1
        return taken, ended

    def _take(self, msg: MapRecord) -> bool:
        try:
            record = decode_schema_record(msg.key(), msg.value())
            if record is None or record.cluster != self._cluster:
                return False
            if isinstance(record, SchemaIdMapping):
                self.rewriter.learn(record)
            elif isinstance(record, SchemaSubject):
                self.rewriter.describe(record)
            else:
                self.passes = max(self.passes, record.passes)
        except RecordFormatError as exc:
            # Skipped, never guessed at: an ID it was meant to map stays unmapped (or keeps
            # its older target) and its records wait rather than carry a wrong ID.
            log.warning(
                "%s-%s@%s: a schema-ID mapping that does not parse, skipped: %s",
                self.topic,
                msg.partition(),
                msg.offset(),
                exc,
            )
            return False
        return True
