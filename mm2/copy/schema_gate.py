"""Schema IDs at a copy task's door: rewritten through the flow's map, or the partition held.

A flow whose two clusters have Schema Registries (issue 25) copies records whose keys and
values name a schema by the source registry's ID. The schema connector registers each schema
on the target and writes source ID -> target ID into the flow's offsets topic; the copy task
reads that map (mm2.copy.schema_map) and rewrites each record's IDs (mm2.copy.schema_ids) as it
produces it, inside the same transaction. A record whose ID has no target yet (its schema was
registered on the source a moment ago) is never copied with the source's ID: its partition
stops there (unassigned, like an out-of-range partition) and starts again at that record as
soon as the map has news. One that waits longer than schema.ids.wait.ms ends the copy task
with SchemaNotMirroredError naming the record, and its runner restarts it with backoff.
"""

from __future__ import annotations

import logging
import time

from confluent_kafka import TopicPartition

from mm2.copy.schema_ids import Headers, Missing, Rewritten, SchemaIdRewriter
from mm2.copy.schema_map import SchemaIdFeed
from mm2.copy.spec import TP, CopyTaskSpec
from mm2.errors import ConfigError, SchemaNotMirroredError

__all__ = ["SchemaGate"]

log = logging.getLogger(__name__)


class SchemaGate:
    """One copy task's ID rewriting and the partitions it holds, each at its first record whose
    schema is not mirrored yet."""

    def __init__(self, spec: CopyTaskSpec, feed: SchemaIdFeed) -> None:
        self.spec = spec
        self._feed = feed
        self._rewrite = feed.rewriter.rewrite
        self.held: dict[TP, tuple[int, Missing]] = {}
        # When each partition began to wait at its held record: kept across releases that did
        # not bring its ID, so that the bound counts from the first wait.
        self._since: dict[TP, tuple[int, float]] = {}

    @classmethod
    def open(cls, spec: CopyTaskSpec) -> SchemaGate | None:
        """The gate of a flow that mirrors schemas; None for every other flow (records are
        copied byte for byte)."""
        if not spec.schema_ids:
            return None
        if spec.offsets_consumer is None:  # never copy source IDs silently
            raise ConfigError(
                f"{spec.flow}: schema IDs are to be rewritten but the copy task was given no "
                "reader of the offsets topic, where the ID map is"
            )
        rewriter = SchemaIdRewriter(
            prefixed_keys=spec.schema_id_keys, prefixed_values=spec.schema_id_values
        )
        feed = SchemaIdFeed.open(
            spec.offsets_consumer, spec.offsets_topic, flow=spec.flow,
            cluster=spec.source_alias, rewriter=rewriter,
        )  # fmt: skip
        return cls(spec, feed)

    def rewrite(
        self, key: bytes | None, value: bytes | None, headers: Headers | None
    ) -> Rewritten | Missing | None:
        """The record with its IDs translated, Missing, or None to copy it as it is. The copy
        loop never asks for the partitions the planner marked `as_is` (the heartbeats topics,
        mm2's own records, which start with a 0x00 version byte like Confluent's format)."""
        return self._rewrite(key, value, headers)

    def catch_up(self, timeout: float = 30.0) -> int:
        """Read the whole map before the first record is copied; returns the mappings read."""
        return self._feed.catch_up(timeout)

    def hold(self, tp: TP, offset: int, missing: Missing) -> None:
        """Stop copying `tp` at `offset` (the caller unassigns it) until the map has news."""
        self.held[tp] = (offset, missing)
        waiting = self._since.get(tp)
        if waiting is None or waiting[0] != offset:
            self._since[tp] = (offset, time.monotonic())
            log.info("%s: %s-%d@%d waits: %s on the target (the schema connector registers "
                        "it, then copying goes on)", self.spec.flow, tp[0], tp[1], offset,
                        missing)  # fmt: skip

    def poll(self) -> list[TopicPartition]:
        """The held partitions to assign again (at their held record) once the map has news;
        raises SchemaNotMirroredError for one held longer than schema.ids.wait.ms."""
        if not self.held:
            return []
        if self._feed.poll():
            released = [TopicPartition(t, p, at) for (t, p), (at, _) in self.held.items()]
            self.held.clear()
            return released
        now = time.monotonic()
        for (topic, partition), (offset, missing) in self.held.items():
            since = self._since[(topic, partition)][1]
            if (now - since) * 1000 >= self.spec.schema_wait_ms:
                raise SchemaNotMirroredError(
                    f"{self.spec.flow}: {topic}-{partition}@{offset}: {missing} after "
                    f"{now - since:.0f} s (schema.ids.wait.ms = {self.spec.schema_wait_ms}): "
                    "the schema connector has not registered it on the target (see its status "
                    "and log), or the record only looks like Confluent's wire format (keys "
                    "written by another serializer: set schema.ids.keys = false)"
                )
        return []

    def forget(self) -> None:
        """Every partition is assigned again from the last commit: nothing is held any more."""
        self.held.clear()
        self._since.clear()

    def close(self) -> None:
        self._feed.close()
