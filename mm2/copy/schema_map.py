"""The schema-ID map a copy task rewrites with, as the flow's offsets topic holds it.

The flow's schema connector registers each source schema on the target and, where the target
registry gave it another ID, writes a mapping record to the offsets topic on the target
(mm2.records.schema_ids: keyed like Connect's offsets, so the topic's compaction keeps the
newest per source ID). A copy task's one reader of that topic (mm2.copy.task_offsets) reads
every partition to its end before the task copies, so a restart or a standby starts from the
whole map instead of holding every partition until the connector writes it again, and then
hands over what arrives between two rounds, which is what lets a partition held for an
unmapped ID go on. The schema task reads the map back the same way when it starts.

`SchemaIdMap.decode` is the reader's decoder for the schema records: it takes those of one
source cluster into the rewriter and returns None for every record, so the reader keeps
nothing of them.
"""

from __future__ import annotations

import logging

from mm2.copy.schema_ids import SchemaIdRewriter
from mm2.errors import RecordFormatError
from mm2.records.offsets_topic import SCHEMA, partition_of
from mm2.records.schema_ids import SchemaIdMapping, SchemaSubject, decode_schema_record

__all__ = ["SchemaIdMap"]

log = logging.getLogger(__name__)


class SchemaIdMap:
    """The mappings of one source cluster (`cluster`, its alias) read from the offsets topic
    into `rewriter`, the newest record of a source ID last and so winning."""

    def __init__(
        self, topic: str, *, cluster: str, rewriter: SchemaIdRewriter | None = None
    ) -> None:
        self.topic = topic
        self.rewriter = rewriter if rewriter is not None else SchemaIdRewriter()
        self._cluster = cluster
        self.passes = 0  # the schema connector's finished passes over the source registry
        self.taken = 0  # records taken so far
        self._news = 0  # records taken since the last news()

    def decode(self, key: bytes | None, value: bytes | None, _headers: object) -> None:
        """The offsets-topic reader's decoder (mm2.copy.offsets_reader.Decode): takes a
        schema record of this cluster, leaves every other record alone."""
        if partition_of(key, SCHEMA) is not None:
            self.take(key, value)

    def take(self, key: bytes | None, value: bytes | None) -> bool:
        """Take one record of the topic; False when it is no schema record of this cluster,
        or one that does not parse (skipped with a warning, never guessed at)."""
        try:
            record = decode_schema_record(key, value)
            if record is None or record.cluster != self._cluster:
                return False
            if isinstance(record, SchemaIdMapping):
                self.rewriter.learn(record)
            elif isinstance(record, SchemaSubject):
                self.rewriter.describe(record)
            else:
                self.passes = max(self.passes, record.passes)
        except RecordFormatError as exc:
            # An ID it was meant to map stays unmapped (or keeps its older target) and its
            # records wait rather than carry a wrong ID.
            log.warning(
                "%s: a schema-ID mapping that does not parse, skipped (key %r): %s",
                self.topic,
                key,
                exc,
            )
            return False
        self.taken += 1
        self._news += 1
        return True

    def news(self) -> int:
        """The records taken since the last call."""
        news, self._news = self._news, 0
        return news

    def said_read(self, seconds: float) -> None:
        """Log, at INFO, what the map holds after reading the topic to its end."""
        log.info(
            "schema-ID map of %s read from %s: %d ID(s), %d GUID(s) in %.1f s",
            self._cluster,
            self.topic,
            len(self.rewriter.ids),
            len(self.rewriter.guids),
            seconds,
        )
