"""A consumer-group admin in memory (mm2.kafka.groups.GroupAdmin's offset calls), refusing a
commit while the group has members, as the broker does."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from mm2.errors import KafkaClientError
from mm2.records import OffsetAndMetadata, TopicPartition

__all__ = ["FakeGroups"]


class FakeGroups:
    """Every group has the same committed offsets; `calls` holds each commit that went in."""

    def __init__(self, committed: Mapping[TopicPartition, OffsetAndMetadata] | None = None) -> None:
        self.committed = dict(committed or {})
        self.calls: list[dict[TopicPartition, int]] = []
        self.fail: KafkaClientError | None = None
        self.members = False  # the broker refuses a commit from outside a group with members

    def committed_offsets(
        self, groups: Iterable[str]
    ) -> dict[str, dict[TopicPartition, OffsetAndMetadata]]:
        return {g: dict(self.committed) for g in groups}

    def alter_offsets(
        self, group: str, offsets: Mapping[TopicPartition, OffsetAndMetadata]
    ) -> bool:
        if self.fail is not None:
            raise self.fail
        if self.members:
            return False
        self.calls.append({tp: om.offset for tp, om in offsets.items()})
        self.committed.update(offsets)
        return True
