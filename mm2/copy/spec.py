"""What the planner hands each copy task: the flow's settings and what the task was dealt.

A spec crosses into a Spark task as JSON, so it holds plain values only.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass

from mm2.copy.settings import CopySettings
from mm2.records import TP

__all__ = ["BEGINNING", "TP", "TRANSACTION_TIMEOUT_MS", "Assignment", "CopyTaskSpec"]

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
    ("" when unknown), written with each position, whether it is a partition of a heartbeats
    topic (as the flow's replication policy names them), and whether its records are copied as
    they are in a flow that rewrites schema IDs (the heartbeats topics: mm2's own records, never
    Confluent's wire format)."""

    topic: str
    partition: int
    target_topic: str
    next_offset: int = -1
    topic_id: str = ""
    as_is: bool = False
    heartbeats: bool = False


@dataclass(frozen=True)
class CopyTaskSpec:
    """Everything one copy task needs, as JSON a Spark task can be handed: the flow's settings
    (one value, the same in every spec of the flow) and what this task and epoch were dealt."""

    settings: CopySettings
    task: int
    # Connect's offsets topic of the flow (mm2.copy.positions): the connector its positions
    # are keyed by, the source cluster's id written with each, and the topic.
    connector: str
    source_cluster_id: str
    offsets_topic: str
    partitions: list[Assignment]
    # Connect's `<group.id>-<connector>-<task>`; None: the flow copies at least once.
    transactional_id: str | None = None
    # Where the copy task writes offset syncs (None: emit.offset-syncs.enabled is false).
    syncs_topic: str = ""
    syncs_producer: dict[str, str] | None = None
    # The epoch's id (the partitions the planner adds while it runs are tagged with it,
    # mm2.copy.assignment), and how to read and list the offsets topic (None: never read).
    epoch: str = ""
    offsets_consumer: dict[str, str] | None = None
    offsets_admin: dict[str, str] | None = None
    # Each remote topic's max.message.bytes where the planner knows it: the producer's batches
    # stay within the smallest, and a refused record is judged against its own topic's.
    topic_limits: dict[str, int] = dataclasses.field(default_factory=dict)
    # The leadership the planner ran under (mm2.connect.spi.LeaderEpoch; "": one process, no
    # election): the task starts only while the config topic's newest leader record is of it.
    leader_topic: str = ""
    leader_epoch: str = ""

    @property
    def batch_bytes(self) -> int:
        """The largest record batch every remote topic of this task accepts (librdkafka's
        default batch.size, 1,000,000, when none is smaller)."""
        return min([LIBRDKAFKA_BATCH_SIZE, *self.topic_limits.values()])

    def to_json(self) -> str:
        # Not dataclasses.asdict: it rebuilds dict subclasses (mm2's ClientConfig) by type.
        raw = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        raw["settings"] = {
            f.name: getattr(self.settings, f.name) for f in dataclasses.fields(self.settings)
        }
        raw["partitions"] = [dataclasses.astuple(a) for a in self.partitions]
        return json.dumps(raw, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> CopyTaskSpec:
        raw = json.loads(text)
        raw["settings"] = CopySettings(**raw["settings"])
        raw["partitions"] = [Assignment(*a) for a in raw["partitions"]]
        return cls(**raw)
