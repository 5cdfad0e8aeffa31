"""The recovery point of a flow, read from its target alone: what an unplanned failover loses.

With the source cluster gone, nothing can say what it held at the end; the mirror can say
what it saw. Each copy task writes, beside every committed position in the offsets topic on
the target, the source partition's end offset from its consumer's latest fetch and when it
was seen (`mm2.stats`, mm2.copy.stats). Per source partition this reads: how far the mirror
copied (the next offset it would copy), the last source end it saw and when, and so the records
at risk: at most the offsets between the two (transaction markers and aborted records among
them are no loss). Records the source received after the mirror's last fetch are unknown to
it: the age of `seen_at_ms` says how old that knowledge is.
"""

from __future__ import annotations

from dataclasses import dataclass

from mm2.config import Flow
from mm2.copy.positions import PositionsTopic

__all__ = ["PartitionAtRisk", "recovery_point"]


@dataclass(frozen=True)
class PartitionAtRisk:
    topic: str
    partition: int
    copied_to: int  # the next source offset the mirror would copy
    source_end: int | None  # the source's end offset as the mirror last saw it
    seen_at_ms: int | None  # when (epoch ms)

    @property
    def at_risk(self) -> int | None:
        """Records not copied, at most; None when the mirror never wrote what it saw."""
        if self.source_end is None:
            return None
        return max(0, self.source_end - self.copied_to)

    def to_json(self) -> dict[str, object]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "copied_to": self.copied_to,
            "source_end": self.source_end,
            "seen_at_ms": self.seen_at_ms,
            "at_risk_at_most": self.at_risk,
        }


def recovery_point(flow: Flow, *, timeout: float = 15.0) -> list[PartitionAtRisk]:
    """Every source partition the flow has a position for, from the offsets topic on the
    target (no request to the source): what is committed there now, without waiting for a
    transaction a killed copy task left open. Raises KafkaClientError when the topic cannot be
    read (it does not exist: the flow never ran, or runs elsewhere under another name)."""
    stored = PositionsTopic.of(flow).read(timeout, ensure=False, stable=True)
    out = []
    for tp, offset in sorted(stored.offsets.items()):
        end, seen = stored.source_ends.get(tp, (None, None))
        out.append(PartitionAtRisk(tp[0], tp[1], offset + 1, end, seen))
    return out
