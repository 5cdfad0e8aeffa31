"""GroupAdmin: one cluster's consumer groups, their states and committed offsets."""

from __future__ import annotations

import concurrent.futures
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from confluent_kafka import (
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    ConsumerGroupType,
    KafkaError,
    KafkaException,
)
from confluent_kafka import (
    TopicPartition as KafkaTopicPartition,
)
from confluent_kafka.admin import AdminClient

from mm2.errors import KafkaClientError
from mm2.kafka.failure import ClientWatch
from mm2.records import OffsetAndMetadata, TopicPartition

__all__ = ["GroupAdmin", "GroupState"]

_T = TypeVar("_T")

GroupOffsets = dict[TopicPartition, OffsetAndMetadata]


# What the group coordinator answers an offset commit from outside the group (generation -1,
# no member id) while the group has members, classic (UNKNOWN_MEMBER_ID, measured on Kafka 4.4)
# or of the consumer protocol, KIP-848 (UNKNOWN_MEMBER_ID, measured; STALE_MEMBER_EPOCH): the
# group came alive since it was described.
_HAS_MEMBERS = {
    KafkaError.UNKNOWN_MEMBER_ID,
    KafkaError.STALE_MEMBER_EPOCH,
    KafkaError.ILLEGAL_GENERATION,
    KafkaError.REBALANCE_IN_PROGRESS,
}


@dataclass(frozen=True)
class GroupState:
    """A consumer group's state (Kafka's names: Empty, Stable, Dead, ...), member count and
    protocol ("classic", or "consumer" for KIP-848 groups), as the API of its protocol says."""

    group: str
    state: str
    members: int
    protocol: str = "classic"

    @property
    def active(self) -> bool:
        """Members are consuming (or rebalancing), or the state is one mm2 does not know: no
        offsets are written for it."""
        return self.members > 0 or self.state not in ("Empty", "Dead")


def _state_name(state: object) -> str:
    if isinstance(state, ConsumerGroupState):
        return {
            ConsumerGroupState.EMPTY: "Empty",
            ConsumerGroupState.STABLE: "Stable",
            ConsumerGroupState.DEAD: "Dead",
            ConsumerGroupState.PREPARING_REBALANCING: "PreparingRebalance",
            ConsumerGroupState.COMPLETING_REBALANCING: "CompletingRebalance",
        }.get(state, "Unknown")
    return "Unknown"


class GroupAdmin:
    """Consumer-group calls over one long-lived admin client; failures name the group and the
    cluster, and are retriable unless mm2.kafka.failure says a person must act."""

    def __init__(self, config: Mapping[str, str | int | bool], *, timeout: float = 30.0) -> None:
        self._watch = ClientWatch(config, window_s=timeout + 60)
        self._admin = AdminClient(self._watch.settings())
        self._watch.serve_with(self._admin.poll)
        self._timeout = timeout

    def _wait(self, future: concurrent.futures.Future[_T], what: str) -> _T:
        try:
            return future.result(timeout=self._timeout)
        except (KafkaException, concurrent.futures.TimeoutError) as exc:
            raise self._watch.error(what, exc) from exc

    def list_groups(self) -> list[str]:
        """Every consumer group the cluster knows (Apache: listConsumerGroups().valid())."""
        result = self._wait(
            self._admin.list_consumer_groups(request_timeout=self._timeout), "listing groups"
        )
        return sorted(g.group_id for g in result.valid)

    def _await_coordinators(self, groups: list[str]) -> None:
        """librdkafka 2.x crashes the process when OffsetFetch meets a group coordinator that is
        still loading (librdkafka issue 5040; a cluster that never had a group is one), while
        DescribeGroups reports it as an error: describe until that error is gone."""
        deadline = time.monotonic() + self._timeout
        while True:
            try:
                self.describe(groups)
                return
            except KafkaClientError as exc:
                if not exc.retriable or time.monotonic() > deadline:
                    raise
            time.sleep(0.3)

    def committed_offsets(self, groups: Iterable[str]) -> dict[str, GroupOffsets]:
        """Committed offsets (with metadata) per group; partitions without a commit are left out."""
        groups = list(groups)
        if groups:
            self._await_coordinators(groups)
        futures = {
            group: self._admin.list_consumer_group_offsets(
                [ConsumerGroupTopicPartitions(group)], request_timeout=self._timeout
            )[group]
            for group in groups
        }
        out: dict[str, GroupOffsets] = {}
        for group, future in futures.items():
            result = self._wait(future, f"listing offsets of group {group!r}")
            offsets: GroupOffsets = {}
            for tp in result.topic_partitions or []:
                if tp.offset >= 0:
                    offsets[TopicPartition(tp.topic, tp.partition)] = OffsetAndMetadata(
                        tp.offset, tp.metadata or ""
                    )
            out[group] = offsets
        return out

    def describe(self, groups: Iterable[str]) -> dict[str, GroupState]:
        """State and member count of each group; an unknown group is Dead with no members."""
        wanted = list(groups)
        if not wanted:
            return {}
        futures = self._admin.describe_consumer_groups(wanted, request_timeout=self._timeout)
        out = {}
        for group, future in futures.items():
            desc = self._wait(future, f"describing group {group!r}")
            protocol = "consumer" if desc.type == ConsumerGroupType.CONSUMER else "classic"
            out[group] = GroupState(
                group, _state_name(desc.state), len(desc.members or []), protocol
            )
        return out

    def alter_offsets(
        self, group: str, offsets: Mapping[TopicPartition, OffsetAndMetadata]
    ) -> bool:
        """Commit `offsets` for `group`: False, and nothing written, when the broker refuses it
        because the group has members (one joined since it was found empty)."""
        request = ConsumerGroupTopicPartitions(
            group,
            [
                KafkaTopicPartition(tp.topic, tp.partition, om.offset, om.metadata or "")
                for tp, om in offsets.items()
            ],
        )
        future = self._admin.alter_consumer_group_offsets([request], request_timeout=self._timeout)
        try:
            result = self._wait(future[group], f"committing offsets of group {group!r}")
        except KafkaClientError as exc:
            cause = exc.__cause__
            if isinstance(cause, KafkaException) and cause.args[0].code() in _HAS_MEMBERS:
                return False
            raise
        errors = [tp for tp in result.topic_partitions or [] if tp.error is not None]
        if any(tp.error.code() in _HAS_MEMBERS for tp in errors):
            return False
        for tp in errors:
            raise self._watch.error(
                f"committing {tp.topic}-{tp.partition} for group {group!r}", tp.error
            )
        return True
