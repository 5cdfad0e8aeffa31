"""Schema IDs at a copy task's door: rewritten through the flow's map, or the partition held.

A flow whose two clusters have Schema Registries copies records whose keys and values name a
schema by the source registry's ID. The schema connector registers each source schema on the
target and writes, into the flow's offsets topic, source ID -> target ID, each subject's
source IDs, and how many passes over the source registry it finished; the copy task reads them
(mm2.copy.schema_map) and rewrites each record's IDs (mm2.copy.schema_ids) as it produces it,
inside the same transaction. Keys and values of a topic no subject describes are copied byte for
byte.

A record whose ID has no target yet, or whose prefix reads as an ID none of the topic's
subjects holds, is never copied with the source's ID: its partition stops there (unassigned,
like an out-of-range partition; the flow's other partitions go on) and starts again at that
record as soon as the map has news. An ID no subject of the topic holds three passes of the
schema connector after the hold began is none of theirs (a serializer registers its schema
before it writes a record): those bytes are no prefix, and such records are copied as they
are. The map is read every 100 ms, held partition or not. A partition held longer than
schema.ids.wait.ms is said at WARN, naming the partition, the offset and the ID, and stays
held.
"""

from __future__ import annotations

import logging
import time

from confluent_kafka import TopicPartition

from mm2.copy.schema_ids import Headers, Missing, Rewritten, SchemaIdRewriter
from mm2.copy.schema_map import SchemaIdMap
from mm2.copy.spec import CopyTaskSpec
from mm2.errors import ConfigError
from mm2.records import TP

__all__ = ["SchemaGate"]

log = logging.getLogger(__name__)

# Passes of the schema connector, finished after a look-alike was held, before it is decided:
# the first may have begun before the record's schema was registered, and the count read when
# the hold began may be a pass behind (the map is read every 100 ms).
_PASSES = 3


class SchemaGate:
    """One copy task's ID rewriting and the partitions it holds, each at its first record whose
    schema is not mirrored yet."""

    def __init__(self, spec: CopyTaskSpec, schema_map: SchemaIdMap) -> None:
        self.spec = spec
        self.map = schema_map  # filled by the task's reader of the offsets topic
        self._rewrite = schema_map.rewriter.rewrite
        self.held: dict[TP, tuple[int, Missing]] = {}
        # When each partition began to wait at its held record: kept across releases that did
        # not bring its ID, so that the bound counts from the first wait.
        self._since: dict[TP, tuple[int, float]] = {}
        self._passes_at: dict[TP, int] = {}  # the schema connector's passes when the hold began
        self._said: set[tuple[TP, int]] = set()  # held past the bound, said at WARN

    @classmethod
    def open(cls, spec: CopyTaskSpec) -> SchemaGate | None:
        """The gate of a flow that mirrors schemas; None for every other flow (records are
        copied byte for byte)."""
        if not spec.settings.schema_ids:
            return None
        if spec.offsets_consumer is None:  # never copy source IDs silently
            raise ConfigError(
                f"{spec.settings.flow}: schema IDs are to be rewritten but the copy task was given "
                "no reader of the offsets topic, where the ID map is"
            )
        s = spec.settings
        rewriter = SchemaIdRewriter(
            prefixed_keys=s.schema_ids_keys,
            prefixed_values=s.schema_ids_values,
            strategies=(s.key_subject_name_strategy, s.value_subject_name_strategy),
        )
        return cls(
            spec, SchemaIdMap(spec.offsets_topic, cluster=spec.settings.source, rewriter=rewriter)
        )

    def rewrite(
        self, topic: str, key: bytes | None, value: bytes | None, headers: Headers | None
    ) -> Rewritten | Missing | None:
        """The record of `topic` with its IDs translated, Missing, or None to copy it as it is.
        The copy loop never asks for the partitions the planner marked `as_is` (the heartbeats
        topics, mm2's own records, which start with a 0x00 version byte like Confluent's)."""
        return self._rewrite(key, value, headers, topic)

    def hold(self, tp: TP, offset: int, missing: Missing) -> None:
        """Stop copying `tp` at `offset` (the caller unassigns it) until the map has news."""
        self.held[tp] = (offset, missing)
        waiting = self._since.get(tp)
        if waiting is None or waiting[0] != offset:
            self._since[tp] = (offset, time.monotonic())
            self._passes_at[tp] = self.map.passes
            log.info(
                "%s: %s-%d@%d waits: %s on the target (the schema connector registers "
                "it, then copying goes on)",
                self.spec.settings.flow,
                tp[0],
                tp[1],
                offset,
                missing,
            )

    def poll(self) -> list[TopicPartition]:
        """The held partitions to assign again (at their held record) once the map has news or
        the schema connector's passes decided a look-alike; says at WARN (once) a partition
        held longer than schema.ids.wait.ms."""
        news = self.map.news()  # every time: what the task's reader took since the last round
        if not self.held:
            return []
        for (topic, partition), (offset, missing) in self.held.items():
            passes = self.map.passes - self._passes_at[(topic, partition)]
            if not missing.described and passes >= _PASSES and isinstance(missing.schema, int):
                self.map.rewriter.unframed(topic, missing.field, missing.schema)
                log.info(
                    "%s: %s-%d@%d: %s after %d passes over the source registry: those "
                    "bytes are no schema ID, and records of %s whose %s reads as ID %d "
                    "are copied as they are",
                    self.spec.settings.flow,
                    topic,
                    partition,
                    offset,
                    missing,
                    passes,
                    topic,
                    missing.field,
                    missing.schema,
                )
                news += 1
        if news:
            released = [TopicPartition(t, p, at) for (t, p), (at, _) in self.held.items()]
            self.held.clear()
            return released
        now = time.monotonic()
        for (topic, partition), (offset, missing) in self.held.items():
            since = self._since[(topic, partition)][1]
            late = (now - since) * 1000 >= self.spec.settings.schema_ids_wait_ms
            if late and ((topic, partition), offset) not in self._said:
                self._said.add(((topic, partition), offset))
                log.warning(
                    "%s: %s-%d@%d has waited %.0f s (schema.ids.wait.ms = %d): %s; the "
                    "partition stays held until the schema connector maps it (see its status "
                    "and log); the flow's other partitions go on",
                    self.spec.settings.flow,
                    topic,
                    partition,
                    offset,
                    now - since,
                    self.spec.settings.schema_ids_wait_ms,
                    missing,
                )
        return []

    def forget(self) -> None:
        """Every partition is assigned again from the last commit: nothing is held any more."""
        self.held.clear()
        self._since.clear()
