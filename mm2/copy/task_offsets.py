"""A copy task's one reader of its flow's offsets topic.

One consumer (mm2.copy.offsets_reader, read_committed, every partition from the start) gives a
copy task the three things it reads there, each record picked by its kind
(mm2.records.offsets_topic):
- the partitions its epoch added to it while it runs (mm2.copy.assignment: the record of its
  flow, tagged with its epoch; a task Spark runs again finds those added before it started);
- in a flow that rewrites schema IDs, the map (mm2.copy.schema_map), read to its end before the
  task copies and then as it arrives;
- while it starts, its committed positions, read after its producer fenced every earlier holder
  of its transactional id, so that what a lost attempt or a zombie committed is not copied
  again. Positions are dropped once the task copies: they are its own, and it knows them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from mm2.copy.assignment import assignment_key, decode_additions
from mm2.copy.offsets_reader import Decode, OffsetsTopicReader
from mm2.copy.position_record import PositionRecord, StoredPositions, decode_position
from mm2.copy.positions import holding
from mm2.copy.schema_map import SchemaIdMap
from mm2.copy.spec import Assignment, CopyTaskSpec
from mm2.errors import ConfigError
from mm2.records import TP
from mm2.records.offsets_topic import ASSIGNMENT, SCHEMA, partition_of

__all__ = ["OpenReader", "TaskOffsets"]

# a decoder -> the reader of the offsets topic that hands it every record
OpenReader = Callable[[Decode[PositionRecord]], OffsetsTopicReader[PositionRecord]]


class TaskOffsets:
    """What one copy task reads of the offsets topic, through one reader."""

    def __init__(
        self,
        spec: CopyTaskSpec,
        *,
        schemas: SchemaIdMap | None = None,
        open_reader: OpenReader | None = None,
    ) -> None:
        """`open_reader` builds the reader with this object's decoder (by default a real
        consumer of the topic the spec names)."""
        self._spec = spec
        self._schemas = schemas
        self._assignment_key = assignment_key(spec.settings.flow)
        self._added: list[Assignment] = []
        self._resuming = True  # positions are kept until the task has resumed
        self._positions = StoredPositions()
        self._reader = (open_reader or self._real_reader)(self.decode)

    def _real_reader(self, decode: Decode[PositionRecord]) -> OffsetsTopicReader[PositionRecord]:
        spec = self._spec
        if spec.offsets_consumer is None:
            raise ConfigError(
                f"{spec.settings.flow}: the copy task was given no reader of {spec.offsets_topic}"
            )
        admin = spec.offsets_admin or spec.offsets_consumer
        return OffsetsTopicReader(spec.offsets_consumer, admin, spec.offsets_topic, decode=decode)

    @classmethod
    def open(cls, spec: CopyTaskSpec, schemas: SchemaIdMap | None) -> TaskOffsets | None:
        """The task's reader; None when the spec names none (a copy task outside a planner)."""
        if spec.offsets_consumer is None:
            return None
        return cls(spec, schemas=schemas)

    def decode(
        self, key: bytes | None, value: bytes | None, headers: object
    ) -> PositionRecord | None:
        """The reader's decoder: assignments and schema records are taken here, positions
        returned while the task resumes, everything else left alone."""
        if partition_of(key, ASSIGNMENT) is not None:
            if key == self._assignment_key:
                self._added.extend(decode_additions(value, self._spec.epoch, self._spec.task))
            return None
        if partition_of(key, SCHEMA) is not None:  # never a position
            if self._schemas is not None:
                self._schemas.take(key, value)
            return None
        if not self._resuming:
            return None
        return decode_position(
            key, value, headers, connector=self._spec.connector, cluster=self._spec.settings.source
        )

    def catch_up_assignment(self, timeout: float = 30.0) -> list[Assignment]:
        """Every partition the planner added to this task so far: partition 0 of the topic
        read to its end offset at the call."""
        self._keep(self._reader.read_to_end(timeout, holding=lambda _count: {0}))
        return self._take_added()

    def catch_up_schema_ids(self, timeout: float = 30.0) -> int:
        """The whole schema-ID map: every partition read to its last stable offset (what is
        committed now); returns the mappings read (0 in a flow without a map)."""
        if self._schemas is None:
            return 0
        began, taken = time.monotonic(), self._schemas.taken
        self._keep(self._reader.read_to_end(timeout, stable=True))
        self._schemas.said_read(time.monotonic() - began)
        return self._schemas.taken - taken

    def positions(self, only: Iterable[TP], timeout: float = 60.0) -> StoredPositions:
        """The task's committed positions (of `only`, its partitions): the partitions of the
        topic that hold them read to their end offsets at the call. Positions are not kept
        after this."""
        partitions = list(only)
        self._keep(
            self._reader.read_to_end(
                timeout,
                holding=holding(self._spec.connector, self._spec.settings.source, partitions),
            )
        )
        self._resuming = False
        positions, self._positions = self._positions, StoredPositions()
        return positions

    def poll(self) -> list[Assignment]:
        """The partitions added by the records that have arrived (the map takes its own);
        does not wait."""
        self._keep(self._reader.poll())
        return self._take_added()

    def resumed(self) -> None:
        """No positions are read from now on (a task that does not resume from them)."""
        self._resuming = False
        self._positions = StoredPositions()

    def close(self) -> None:
        self._reader.close()

    def _keep(self, records: list[PositionRecord]) -> None:
        if self._resuming:
            self._positions.apply(records)

    def _take_added(self) -> list[Assignment]:
        """Each partition once (every record of an epoch holds all its additions so far)."""
        added = {(a.topic, a.partition): a for a in self._added}
        self._added = []
        return list(added.values())
