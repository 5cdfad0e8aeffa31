"""What the planner hands each copy task: its partitions, clients and transaction settings.

A spec crosses into a Spark task as JSON, so it holds plain values only.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass

__all__ = ["BEGINNING", "TP", "TRANSACTION_TIMEOUT_MS", "Assignment", "CopyTaskSpec"]

TP = tuple[str, int]
LIBRDKAFKA_BATCH_SIZE = 1_000_000
# A copy task's transaction.timeout.ms: the coordinator aborts a transaction open longer.
TRANSACTION_TIMEOUT_MS = 60_000
# A next offset: copy from the start of the log, whatever auto.offset.reset says (a topic
# re-created since its position was stored).
BEGINNING = -2


@dataclass(frozen=True)
class Assignment:
    """A source partition, its remote topic, the next offset to copy (-1: none stored, the
    consumer's auto.offset.reset decides; BEGINNING: the log's start), the source topic's id
    ("" when unknown), written with each position, and whether its records are copied as they
    are in a flow that rewrites schema IDs (the heartbeats topics, as the flow's replication
    policy names them: mm2's own records, never Confluent's wire format)."""

    topic: str
    partition: int
    target_topic: str
    next_offset: int = -1
    topic_id: str = ""
    as_is: bool = False


@dataclass(frozen=True)
class CopyTaskSpec:
    """Everything one copy task needs, as JSON a Spark task can be handed."""

    flow: str
    task: int
    connector: str
    source_alias: str
    source_cluster_id: str
    source_consumer: dict[str, str]
    target_producer: dict[str, str]
    offsets_topic: str
    partitions: list[Assignment]
    transactional_id: str | None = None
    boundary_ms: int = 100
    transaction_timeout_ms: int = TRANSACTION_TIMEOUT_MS
    skip_oversized: bool = False
    syncs_topic: str = ""
    syncs_producer: dict[str, str] | None = None
    offset_lag_max: int = 100
    # Partitions the planner adds while the epoch runs (mm2.copy.assignment): the epoch's id,
    # where its records start in the offsets topic, and how to read it (None: never).
    epoch: str = ""
    assignments_from: int = -1
    offsets_consumer: dict[str, str] | None = None
    # Each remote topic's max.message.bytes where the planner knows it: the producer's batches
    # stay within the smallest, and a refused record is judged against its own topic's.
    topic_limits: dict[str, int] = dataclasses.field(default_factory=dict)
    # The leadership the planner ran under (mm2.connect.spi.LeaderEpoch; "": one process, no
    # election): the task starts only while the config topic's newest leader record is of it.
    leader_topic: str = ""
    leader_epoch: str = ""
    # Schema IDs rewritten through the flow's map (mm2.copy.schema_gate): on when
    # the flow mirrors schemas; keys and values each may be left alone; how long a record
    # whose ID is not mapped yet waits before the task restarts.
    schema_ids: bool = False
    schema_id_keys: bool = True
    schema_id_values: bool = True
    schema_key_strategy: str = "TopicNameStrategy"  # which subjects describe a topic's keys
    schema_value_strategy: str = "TopicNameStrategy"
    schema_wait_ms: int = 60_000
    # The source's admin client settings: before each commit the task asks the source for the
    # ids of the topics it copied records of (mm2.copy.loop, a topic deleted and created
    # again). None: never asked.
    source_admin: dict[str, str] | None = None

    @property
    def batch_bytes(self) -> int:
        """The largest record batch every remote topic of this task accepts (librdkafka's
        default batch.size, 1,000,000, when none is smaller)."""
        return min([LIBRDKAFKA_BATCH_SIZE, *self.topic_limits.values()])

    @property
    def source(self) -> str:
        return self.flow.partition("->")[0]

    @property
    def target(self) -> str:
        return self.flow.partition("->")[2]

    def to_json(self) -> str:
        # Not dataclasses.asdict: it rebuilds dict subclasses (mm2's ClientConfig) by type.
        raw = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        raw["partitions"] = [dataclasses.astuple(a) for a in self.partitions]
        return json.dumps(raw, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> CopyTaskSpec:
        raw = json.loads(text)
        raw["partitions"] = [Assignment(*a) for a in raw["partitions"]]
        return cls(**raw)
