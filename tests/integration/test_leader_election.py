"""The leader election on a real broker (mm2.kafka.election.LeaderElection): a node
that joins or comes back never takes the lead from a healthy leader, and a leader that leaves
hands it over."""

from __future__ import annotations

import time
import uuid

import pytest

from mm2.kafka.election import LeaderElection
from tests.support.kafka import Cluster, create_topic
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration


class Node:
    """One process's election, with every change it saw."""

    def __init__(self, cluster: Cluster, topic: str, group: str) -> None:
        self.changes: list[bool] = []
        self.election = LeaderElection(
            "backup",
            topic,
            {"bootstrap.servers": cluster.bootstrap_servers},
            self.changes.append,
            group=group,
            session_timeout_ms=6000,
        )

    @property
    def leads(self) -> bool:
        return self.election.leader

    def start(self) -> Node:
        self.election.start()
        return self

    def stop(self) -> None:
        self.election.stop(timeout=15)


def test_joining_and_returning_nodes_never_take_the_lead_from_a_healthy_leader(
    backup: Cluster,
) -> None:
    topic = create_topic(backup, f"mm2-configs.{uuid.uuid4().hex[:8]}.internal", partitions=1)
    group = f"mm2-leader-test-{uuid.uuid4().hex[:8]}"
    first = Node(backup, topic, group).start()
    nodes = [first]
    try:
        eventually(lambda: first.leads, timeout=60, what="the first node leading")
        for _ in range(2):  # a standby starts, then restarts: a rolling restart of the standby
            standby = Node(backup, topic, group).start()
            nodes.append(standby)
            # Long enough for the join's rebalance to end (group.initial.rebalance.delay.ms is
            # 3 s on a broker's defaults, 0 on the test brokers) and a second one to follow.
            time.sleep(10)
            assert first.changes == [True], f"the leader lost the lead: {first.changes}"
            assert standby.changes == [], f"the joining node took the lead: {standby.changes}"
            standby.stop()
        first.stop()  # the leader leaves: the next one to join leads
        last = Node(backup, topic, group).start()
        nodes.append(last)
        eventually(lambda: last.leads, timeout=60, what="the lead handed over")
        assert first.changes == [True, False]
    finally:
        for node in nodes:
            node.stop()
