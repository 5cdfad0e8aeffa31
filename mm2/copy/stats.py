"""What one transaction copied of one source partition, and the `mm2.stats` header that carries it.

A copy task fills one CopyStats per partition it touches in a transaction and writes it beside
the partition's position in the offsets topic; the planner reads it back from there and feeds
the metrics, so metrics count only what was committed, on every node.
"""

from __future__ import annotations

import builtins
import json
from dataclasses import dataclass, field

__all__ = ["CopyStats", "Run"]

# (upstream offset, downstream offset, length): records copied one after the other on both sides.
Run = tuple[int, int, int]

# The header's wire format: these fields, in this order, as a JSON array of integers.
_HEADER_FIELDS = (
    "records",
    "bytes",
    "skipped",
    "min_timestamp",
    "max_timestamp",
    "sum_timestamp",
    "age_min_ms",
    "age_max_ms",
    "age_sum_ms",
    "finished_ms",
    # Appended later: a header without them (an older mm2's) reads them as 0; a reader ignores
    # integers past the last field it knows (a newer mm2's).
    "gone",
    "truncated",
    "source_end",
    "source_end_ms",
)
_FIRST_FIELDS = 10  # the fields every mm2 version writes


@dataclass
class CopyStats:
    """Counts, timestamps and runs of records `first`..`last` of one source partition, copied to
    the same partition of `target_topic`; `position` is the last upstream offset consumed."""

    topic: str
    partition: int
    target_topic: str
    position: int = -1
    first: int = -1
    records: int = 0
    bytes: int = 0
    skipped: int = 0
    min_timestamp: int = -1
    max_timestamp: int = -1
    sum_timestamp: int = 0
    finished_ms: int = 0
    # record-age-ms: how old records were when the copy task read them (now - record timestamp).
    age_min_ms: int = -1
    age_max_ms: int = -1
    age_sum_ms: int = 0
    # Records deleted from the source (retention, DeleteRecords) before they could be copied,
    # and times the source's log was found truncated below the position (mm2.copy.out_of_range).
    gone: int = 0
    truncated: int = 0
    # The source partition's end offset as the copy task's consumer last saw it (its latest
    # fetch), and when: with the source gone, what the mirror knew was there (mm2 failover).
    source_end: int = 0
    source_end_ms: int = 0
    runs: list[Run] = field(default_factory=list)

    def header(self) -> builtins.bytes:
        """The `mm2.stats` header value."""
        values = [getattr(self, name) for name in _HEADER_FIELDS]
        # Fields appended later go out only when set (up to the last one set): with none, the
        # header is byte for byte what every mm2 version reads.
        while len(values) > _FIRST_FIELDS and values[-1] == 0:
            values.pop()
        return json.dumps(values, separators=(",", ":")).encode()

    @classmethod
    def from_header(
        cls, data: builtins.bytes, *, topic: str, partition: int, target_topic: str, position: int
    ) -> CopyStats | None:
        """The stats a header carries (None when it is not one of ours)."""
        try:
            values = [int(v) for v in json.loads(data)]
        except (ValueError, TypeError):
            return None
        if len(values) < _FIRST_FIELDS:
            return None
        stats = cls(topic, partition, target_topic, position=position)
        # A newer mm2's fields past the last one known here are left out, not the whole header:
        # a field added later then blinds no reader that is already out there.
        for name, value in zip(_HEADER_FIELDS, values, strict=False):
            setattr(stats, name, value)
        return stats
