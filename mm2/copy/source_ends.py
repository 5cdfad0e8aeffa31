"""The source's end offsets as the running mirror last read them, kept in the offsets topic.

A copy task writes the end its consumer saw beside each position it commits (`mm2.stats`), but
only while it copies. The mirror's lag reader asks the source for every mirrored partition's
end every few seconds whatever the flow is doing (running, paused, stopped, between two copy
epochs) and writes what it read, with the time it asked, here: so that with the source gone,
the recovery point (mm2.client.recovery) reads from the target alone how late it knew the
source's ends, never a figure from before a pause that it takes for the last word.

One record per flow, in partition 0 of the offsets topic (beside the copy tasks' notices and
the assignment feed), in Connect's key shape `["mm2-source-ends",{"flow":"A->B"}]`, value
`{"read_at_ms":T,"ends":{"<topic>":[end of partition 0, end of partition 1, …]}}`: a Kafka
Connect worker sees the offsets of a connector it does not run. The topic is compacted: the
newest record of each flow is kept. The ends are high watermarks (read_uncommitted): every
record the source acknowledged to an `acks=all` producer before T lies below them.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass

from mm2.errors import KafkaClientError
from mm2.kafka.producer import RecordProducer
from mm2.records import TP
from mm2.records.offsets_topic import SOURCE_ENDS, kind_key, partition_of

__all__ = [
    "SourceEnds",
    "SourceEndsWriter",
    "decode_source_ends",
    "encode_source_ends",
    "source_ends_key",
]

log = logging.getLogger(__name__)

_PARTITION = 0
# A record above this is not written (the topic's default max.message.bytes is 1 MB): about
# 80,000 partitions' ends. The recovery point then says how old the ends it has are.
_MAX_BYTES = 900_000


@dataclass(frozen=True)
class SourceEnds:
    """The source's end offset of each partition of `flow`'s mirrored topics, asked at
    `read_at_ms` (epoch ms, taken before the request: every record acknowledged before then is
    below its partition's end)."""

    flow: str
    read_at_ms: int
    ends: Mapping[TP, int]


def source_ends_key(flow: str) -> bytes:
    return kind_key(SOURCE_ENDS, {"flow": flow})


def encode_source_ends(read_at_ms: int, ends: Mapping[TP, int]) -> bytes:
    by_topic: dict[str, dict[int, int]] = {}
    for (topic, partition), end in ends.items():
        by_topic.setdefault(topic, {})[partition] = end
    body = {
        topic: [parts.get(p, -1) for p in range(max(parts) + 1)]
        for topic, parts in sorted(by_topic.items())
    }
    return json.dumps({"read_at_ms": read_at_ms, "ends": body}, separators=(",", ":")).encode()


def decode_source_ends(key: bytes | None, value: bytes | None) -> SourceEnds | None:
    """The ends a record of the offsets topic holds, if it is such a record (else None; a
    tombstone or a damaged value too)."""
    part = partition_of(key, SOURCE_ENDS)
    if part is None or not value:
        return None
    try:
        body = json.loads(value)
        ends = {
            (str(topic), p): int(end)
            for topic, row in dict(body["ends"]).items()
            for p, end in enumerate(row)
            if int(end) >= 0
        }
        return SourceEnds(str(part["flow"]), int(body["read_at_ms"]), ends)
    except (ValueError, KeyError, TypeError):
        return None


class SourceEndsWriter:
    """Writes a flow's source ends to its offsets topic; a write that fails (the target away)
    is logged and the next one tries again: the recovery point then shows older ends, with
    their time."""

    def __init__(self, producer_config: Mapping[str, str], topic: str, flow: str) -> None:
        self._config: dict[str, str | int | bool] = {
            **producer_config,
            "allow.auto.create.topics": False,
        }
        self._topic = topic
        self._flow = flow
        self._producer: RecordProducer | None = None
        self._too_big_said = False

    def write(self, read_at_ms: int, ends: Mapping[TP, int], *, timeout: float = 5.0) -> bool:
        """Send the ends and wait up to `timeout` for the target to acknowledge them (True)."""
        value = encode_source_ends(read_at_ms, ends)
        if len(value) > _MAX_BYTES:
            if not self._too_big_said:
                self._too_big_said = True
                log.warning(
                    "%s: the source's ends of %d partitions (%d bytes) are too many to "
                    "keep in %s; the recovery point shows the ends the copy tasks saw",
                    self._flow,
                    len(ends),
                    len(value),
                    self._topic,
                )
            return False
        try:
            if self._producer is None:
                self._producer = RecordProducer(self._config)
            self._producer.send(
                self._topic, source_ends_key(self._flow), value, partition=_PARTITION
            )
            self._producer.flush(timeout)
        except KafkaClientError as exc:
            log.debug("%s: the source's ends not written to %s: %s", self._flow, self._topic, exc)
            return False
        return True

    def close(self) -> None:
        if self._producer is not None:
            self._producer.close()
