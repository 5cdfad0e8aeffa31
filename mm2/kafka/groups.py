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


@dataclass(frozen=True)
class GroupState:
    """A consumer group's state (Kafka's names: Empty, Stable, Dead, ...) and member count."""

    group: str
    state: str
    members: int

    @property
    def active(self) -> bool:
        """Members are consuming (or rebalancing): committing offsets for it would be refused."""
        return self.members > 0 or self.state not in ("Empty", "Dead", "Unknown")


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
            out[group] = GroupState(group, _state_name(desc.state), len(desc.members or []))
        return out

    def alter_offsets(
        self, group: str, offsets: Mapping[TopicPartition, OffsetAndMetadata]
    ) -> None:
        """Commit `offsets` for `group`; the broker refuses it while the group has members."""
        request = ConsumerGroupTopicPartitions(
            group,
            [
                KafkaTopicPartition(tp.topic, tp.partition, om.offset, om.metadata or "")
                for tp, om in offsets.items()
            ],
        )
        future = self._admin.alter_consumer_group_offsets([request], request_timeout=self._timeout)
        result = self._wait(future[group], f"committing offsets of group {group!r}")
        for tp in result.topic_partitions or []:
            if tp.error is not None:
                raise self._watch.error(
                    f"committing {tp.topic}-{tp.partition} for group {group!r}", tp.error
                )
