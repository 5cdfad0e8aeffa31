"""The recovery point of a flow: what an unplanned failover done now loses, or that it is unknown.

Per source partition: how far the mirror copied (the next offset it would copy, from the
offsets topic on the target, committed positions only) and the source's end offset with the
time it was read. The positions are read first; then the source is asked for its ends (high
watermarks). When it answers, every record it acknowledged before that request is below its
partition's end, and every record copied is below the position read before, so the offsets
between the two are an upper bound on what is missing at the time of the report
(`at_risk_at_most`; transaction markers and aborted records among them count too).

When the source does not answer, the ends are the newest the target holds: those the mirror's
lag reader reads every few seconds whatever the flow does (mm2.copy.source_ends) and those its
copy tasks saw beside their positions (`mm2.stats`), each with the time it was read. Records
the source acknowledged after that time are unknown to everyone but the source: the report
gives no bound then (`at_risk_at_most` null), says since when it is unknown
(`unknown_since_ms`), and keeps what it does know as a separate figure (`uncopied_below_end`:
the offsets below the last end read that are not copied now).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass

from mm2.client.lag import mirrored_topic
from mm2.config import Flow
from mm2.copy.position_record import StoredPositions
from mm2.copy.positions import PositionsTopic
from mm2.errors import KafkaClientError, TopicNotFoundError
from mm2.kafka.offsets import OffsetLister
from mm2.kafka.topics import TopicAdmin
from mm2.records import TP

__all__ = [
    "LiveEnds",
    "PartitionAtRisk",
    "RecoveryPoint",
    "assess",
    "recovery_point",
    "utc",
]

# The source is given at most this long to answer (it is often gone when this is asked).
_SOURCE_TIMEOUT_S = 10.0


def utc(ms: int) -> str:
    """`2023-11-14 22:13:20.500`: a time of the report, in UTC."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ms / 1000)) + f".{ms % 1000:03d}"


@dataclass(frozen=True)
class PartitionAtRisk:
    topic: str
    partition: int
    copied_to: int | None  # the next source offset the mirror would copy; None: never copied
    source_end: int | None  # the source's end offset (high watermark); None: never read
    ends_read_at_ms: int | None  # when it was asked for (epoch ms)
    current: bool = False  # read from the source for this report, after the positions
    log_start: int | None = None  # the source's log start, read with a current end when needed

    @property
    def uncopied_below_end(self) -> int | None:
        """The offsets below `source_end` not copied (None: unknown). A current end below the
        position (a log truncated, a topic re-created) leaves all of its log uncopied."""
        if self.source_end is None:
            return None
        if self.copied_to is not None and (self.copied_to <= self.source_end or not self.current):
            return max(0, self.source_end - self.copied_to)
        if self.log_start is None:
            return None
        return max(0, self.source_end - self.log_start)

    @property
    def at_risk(self) -> int | None:
        """Records missing on the target, at most: only from an end read for this report;
        None when it is unknown."""
        return self.uncopied_below_end if self.current else None

    @property
    def unknown_since_ms(self) -> int | None:
        """Since when what the source holds is unknown (None: not unknown, or never known)."""
        return None if self.current else self.ends_read_at_ms

    def to_json(self) -> dict[str, object]:
        """The fields but `log_start` (it only bounds the uncopied records), then the figures."""
        fields = {k: v for k, v in asdict(self).items() if k != "log_start"}
        return fields | {
            "at_risk_at_most": self.at_risk,
            "unknown_since_ms": self.unknown_since_ms,
            "uncopied_below_end": self.uncopied_below_end,
        }


@dataclass(frozen=True)
class RecoveryPoint:
    """A flow's partitions at risk, and whether the figure is a bound or unknown since when."""

    flow: str
    read_at_ms: int
    partitions: tuple[PartitionAtRisk, ...]
    source_problem: str | None = None  # why the source's ends are not current

    @property
    def unknown(self) -> tuple[PartitionAtRisk, ...]:
        return tuple(p for p in self.partitions if p.at_risk is None)

    @property
    def at_risk_at_most(self) -> int | None:
        """The sum over the partitions, when each is a bound (None: unknown)."""
        if self.source_problem is not None or self.unknown:
            return None
        return sum(p.at_risk or 0 for p in self.partitions)

    @property
    def unknown_since_ms(self) -> int | None:
        """The oldest time an end was read at among the partitions without a bound; None
        when there is a bound, or when some partition's end was never read."""
        if self.at_risk_at_most is not None:
            return None
        times = [p.ends_read_at_ms for p in self.unknown]
        if not times or any(t is None for t in times):
            return None
        return min(t for t in times if t is not None)

    @property
    def never_read(self) -> int:
        return sum(1 for p in self.unknown if p.ends_read_at_ms is None)

    @property
    def uncopied_below_ends(self) -> int:
        return sum(p.uncopied_below_end or 0 for p in self.partitions)

    def summary(self) -> str:
        """One sentence: the bound, or since when it is unknown and why."""
        n = len(self.partitions)
        bound = self.at_risk_at_most
        if bound is not None:
            return (
                f"records not copied: at most {bound} in {n} partition(s) (the source's "
                f"ends read at {utc(self.read_at_ms)} UTC, after the positions)"
            )
        why = f"the source's ends are not current: {self.source_problem or 'not read'}"
        since = self.unknown_since_ms
        if since is not None:
            head = f"records not copied: unknown since {utc(since)} UTC"
        else:
            head = (
                f"records not copied: unknown ({self.never_read} partition(s) without an "
                "end ever read)"
            )
        return (
            f"{head} ({why}); below the last ends read, {self.uncopied_below_ends} "
            f"offset(s) in {n} partition(s) are not copied"
        )

    def to_json(self) -> dict[str, object]:
        return {
            "read_at_ms": self.read_at_ms,
            "at_risk_at_most": self.at_risk_at_most,
            "unknown_since_ms": self.unknown_since_ms,
            "unknown_partitions": len(self.unknown),
            "uncopied_below_ends": self.uncopied_below_ends,
            "source_problem": self.source_problem,
            "summary": self.summary(),
            "partitions": [p.to_json() for p in self.partitions],
        }


@dataclass(frozen=True)
class LiveEnds:
    """What the source answered for this report: each mirrored partition's end (asked at
    `read_at_ms`), its log start where needed, and the ids of topics positions name."""

    read_at_ms: int
    ends: Mapping[TP, int]
    starts: Mapping[TP, int]
    topic_ids: Mapping[str, str]


def assess(
    flow: str,
    stored: StoredPositions,
    live: LiveEnds | None,
    *,
    problem: str | None = None,
    now_ms: int | None = None,
) -> RecoveryPoint:
    """The recovery point from the positions (and the ends recorded with them) and, when the
    source answered, its ends read after them (`live`); `problem` says why it did not."""
    now = now_ms if now_ms is not None else int(time.time() * 1000)
    rows: list[PartitionAtRisk] = []
    if live is not None:
        # The source's mirrored partitions now: a position of a topic it no longer has (or
        # no longer mirrors) risks nothing; a partition never copied risks its whole log.
        for tp in sorted(live.ends):
            last = stored.of_topic(tp, live.topic_ids.get(tp[0], ""))
            rows.append(
                PartitionAtRisk(
                    tp[0],
                    tp[1],
                    None if last is None else last + 1,
                    live.ends[tp],
                    live.read_at_ms,
                    current=True,
                    log_start=live.starts.get(tp),
                )
            )
        return RecoveryPoint(flow, live.read_at_ms, tuple(rows))
    for tp in sorted(set(stored.offsets) | set(stored.source_ends)):
        end, read_at = stored.source_ends.get(tp, (None, None))
        last = stored.offsets.get(tp)
        rows.append(PartitionAtRisk(tp[0], tp[1], None if last is None else last + 1, end, read_at))
    return RecoveryPoint(flow, now, tuple(rows), problem or "the source was not asked")


def read_live_ends(flow: Flow, stored: StoredPositions, timeout: float) -> LiveEnds:
    """The source's ends of the flow's mirrored partitions (high watermarks), asked now; the
    log starts of those never copied or whose position is beyond the end, and the topic ids
    positions name. Raises KafkaClientError when the source does not answer."""
    wait = min(timeout, _SOURCE_TIMEOUT_S)
    config = flow.source_admin_config(label="recovery-point")
    mirrored = mirrored_topic(flow)
    admin = TopicAdmin(config, timeout=wait)
    topics = {t: n for t, n in admin.list_topics().items() if mirrored(t)}
    partitions = [(t, p) for t, n in sorted(topics.items()) for p in range(n)]
    named = {t for t, _ in stored.topic_ids if t in topics}
    ids = admin.topic_ids(named) if named else {}
    lister = OffsetLister(config, timeout=wait)
    asked_ms = int(time.time() * 1000)
    ends = lister.offsets(partitions, latest=True, read_committed=False)
    need_start = []
    for tp, end in ends.items():
        last = stored.of_topic(tp, ids.get(tp[0], ""))
        if last is None or last + 1 > end:
            need_start.append(tp)
    starts = lister.offsets(need_start, latest=False, read_committed=False)
    return LiveEnds(asked_ms, ends, starts, ids)


def recovery_point(flow: Flow, *, timeout: float = 15.0) -> RecoveryPoint:
    """The flow's recovery point: the positions from the offsets topic on the target (what is
    committed there now, without waiting for a transaction a killed copy task left open), then
    the source's ends, asked after them; when the source does not answer, the newest ends the
    target holds, with no bound. Raises TopicNotFoundError when the offsets topic does not
    exist (the flow never copied, or its offsets topic has another name), KafkaClientError
    when it cannot be read."""
    try:
        stored = PositionsTopic.of(flow).read(timeout, ensure=False, stable=True)
    except TopicNotFoundError as exc:
        raise TopicNotFoundError(
            f"no recovery point of {flow.name}: {exc}; the flow has copied nothing to "
            f"{flow.target!r} (or its offset.storage.topic is another)"
        ) from None
    try:
        live = read_live_ends(flow, stored, timeout)
    except KafkaClientError as exc:
        return assess(flow.name, stored, None, problem=f"source {flow.source}: {exc}")
    return assess(flow.name, stored, live)
