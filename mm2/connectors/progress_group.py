"""ProgressGroup: a flow's copied positions committed as a consumer group's offsets on the source.

With `progress.group.id = G` (what `kafka-mirror-maker` sets from MirrorMaker 1's
`consumer.config`), the planner commits, every `progress.group.commit.interval.ms` (MirrorMaker
1's `offset.commit.interval.ms`, 60 s by default) and at a clean stop, the position after the
last record copied of each partition as G's offset on the source, so that
`kafka-consumer-groups.sh --describe --group G` shows the mirror's lag as it did for
MirrorMaker 1. The commit needs no membership: the copy tasks never join G. A partition the
offsets topic has no position for starts at G's committed offset, so a mirror that MirrorMaker 1
ran under G resumes where it stopped. The offsets topic stays the source of truth: the group is a
report, read only for partitions without a position.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Collection, Iterable, Mapping
from typing import Protocol

from mm2.config.model import Flow
from mm2.errors import KafkaClientError
from mm2.kafka.groups import GroupAdmin
from mm2.records import TP, OffsetAndMetadata, TopicPartition

__all__ = ["GroupOffsets", "ProgressGroup"]

log = logging.getLogger(__name__)

# A failing commit is logged again after this long when its cause stays the same.
_REPEAT_WARNING_S = 300.0


class GroupOffsets(Protocol):
    """The two calls of mm2.kafka.groups.GroupAdmin this needs."""

    def committed_offsets(
        self, groups: Iterable[str]
    ) -> dict[str, dict[TopicPartition, OffsetAndMetadata]]: ...

    def alter_offsets(
        self, group: str, offsets: Mapping[TopicPartition, OffsetAndMetadata]
    ) -> bool: ...


class ProgressGroup:
    """Commits positions (the last offset copied per partition) as `group`'s offsets."""

    def __init__(
        self, group: str, admin: GroupOffsets, *, interval_s: float, flow_name: str
    ) -> None:
        self.group = group
        self._admin = admin
        self._interval_s = interval_s
        self._flow = flow_name
        self._committed: dict[TP, int] = {}
        self._last = time.monotonic()
        self._warned: tuple[str, float] = ("", 0.0)

    @classmethod
    def for_flow(cls, flow: Flow) -> ProgressGroup | None:
        """The flow's progress group, or None when `progress.group.id` is not set."""
        settings = flow.settings.source
        group = settings.progress_group_id
        if not group:
            return None
        interval_ms = settings.progress_group_commit_interval_ms
        admin = GroupAdmin(flow.source_admin_config(label="progress-group-admin"), timeout=5.0)
        return cls(group, admin, interval_s=interval_ms / 1000, flow_name=flow.name)

    def start_offsets(self) -> dict[TP, int]:
        """The next offset to copy of each partition the group has committed (no commit: absent)."""
        committed = self._admin.committed_offsets([self.group]).get(self.group, {})
        return {(tp.topic, tp.partition): om.offset for tp, om in committed.items()}

    def maybe_commit(
        self, positions: Mapping[TP, int], topics: Collection[str], now: float | None = None
    ) -> None:
        """Commit when the interval has passed since the last commit."""
        now = time.monotonic() if now is None else now
        if now - self._last >= self._interval_s:
            self._last = now
            self.commit(positions, topics)

    def commit(self, positions: Mapping[TP, int], topics: Collection[str]) -> None:
        """Commit the positions of `topics` that moved since the last commit; a failure is
        logged (the mirror goes on copying) and the same offsets are tried again next time."""
        due = {
            tp: offset + 1
            for tp, offset in positions.items()
            if tp[0] in topics and self._committed.get(tp) != offset + 1
        }
        if not due:
            return
        offsets = {TopicPartition(t, p): OffsetAndMetadata(o, "") for (t, p), o in due.items()}
        try:
            written = self._admin.alter_offsets(self.group, offsets)
        except KafkaClientError as exc:
            self._warn(str(exc), retriable=exc.retriable)
            return
        if not written:
            self._warn(
                "the group has members (is an old MirrorMaker 1 still consuming in it? "
                "kafka-consumer-groups.sh --describe --members shows who)",
                retriable=False,
            )
            return
        self._committed.update(due)
        log.debug("%s: committed %d position(s) to group %s", self._flow, len(due), self.group)

    def _warn(self, why: str, *, retriable: bool) -> None:
        text, when = self._warned
        now = time.monotonic()
        if why == text and now - when < _REPEAT_WARNING_S:
            return
        self._warned = (why, now)
        log.log(
            logging.INFO if retriable else logging.WARNING,
            "%s: could not commit the mirror's progress to consumer group %s on the source, "
            "trying again later: %s",
            self._flow,
            self.group,
            why,
        )
