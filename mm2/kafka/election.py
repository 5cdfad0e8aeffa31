"""The consumer group that elects the leader of a target cluster's flows (see mm2.kafka.config_topic
for the topic it subscribes to and how Kafka Connect elects its own leader the same way)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping

from confluent_kafka import Consumer, TopicPartition

from mm2.kafka.failure import ClientWatch

__all__ = ["LeaderElection"]

log = logging.getLogger(__name__)

Setting = str | int | float | bool

# How long a member of an election group that lost its assignment waits to be given one again
# before it leaves and joins with a new consumer (LeaderElection._member).
REJOIN_S = 60.0


class LeaderElection:
    """This process's membership of `group` on one cluster; `on_change(True/False)` is called
    when it becomes or stops being the leader (from the election's own thread)."""

    def __init__(
        self,
        alias: str,
        topic: str,
        consumer_config: Mapping[str, str],
        on_change: Callable[[bool], None],
        *,
        ready: Callable[[threading.Event], bool] = lambda _stopping: True,
        group: str | None = None,
        session_timeout_ms: int = 10_000,
    ) -> None:
        """`ready(stopping)` returns once the topic exists (False: stopped first)."""
        self._ready = ready
        self.alias = alias
        self.group = group or f"mm2-leader.{alias}"
        self._topic = topic
        self._settings: dict[str, Setting] = {
            **consumer_config,
            "group.id": self.group,
            "enable.auto.commit": False,
            # Sticky: a member that joins (a standby starting, a killed node coming back)
            # never takes partition 0, the lead, from a healthy leader; cooperative: the
            # leader keeps it through every rebalance instead of giving it up and back.
            "partition.assignment.strategy": "cooperative-sticky",
            "session.timeout.ms": session_timeout_ms,
            "heartbeat.interval.ms": max(500, session_timeout_ms // 10),
        }
        self._on_change = on_change
        self.leader = False
        self._stopping = threading.Event()
        self._rejoin = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self._run, name=f"election-{self.alias}", daemon=True
        )
        self._thread.start()

    def _set(self, leader: bool) -> None:
        if leader != self.leader:
            self.leader = leader
            log.info(
                "%s leader of %s's flows (group %s)",
                "now" if leader else "no longer",
                self.alias,
                self.group,
            )
            self._on_change(leader)

    def _run(self) -> None:
        if not self._ready(self._stopping):
            return
        try:
            while not self._stopping.is_set():
                self._member()
        except Exception:
            log.exception("leader election on %s stopped", self.alias)
        finally:
            self._set(False)

    def _member(self) -> None:
        """One membership of the group, until stopped or stuck: a member whose assignment was
        lost (the cluster went away past the session timeout) and that has not been given one
        again within REJOIN_S seconds leaves and joins again with a new consumer. (Seen once
        under load: after a 60 s outage of the cluster, the cooperative member never rejoined,
        and no process led its flows.)"""
        consumer = Consumer(ClientWatch(self._settings, alias=self.alias).settings())
        lost_at: list[float] = []  # when the assignment was lost, until one is given again

        # Incremental (cooperative) callbacks: each names only what is added or taken away.
        def assigned(c: Consumer, partitions: list[TopicPartition]) -> None:
            lost_at.clear()
            c.pause(partitions)  # the assignment is the vote; the records are not needed
            if any(p.partition == 0 for p in partitions):
                self._set(True)

        def revoked(_c: Consumer, partitions: list[TopicPartition]) -> None:
            if any(p.partition == 0 for p in partitions):
                self._set(False)

        def lost(_c: Consumer, _partitions: list[TopicPartition]) -> None:
            lost_at[:] = [time.monotonic()]
            self._set(False)

        try:
            consumer.subscribe([self._topic], on_assign=assigned, on_revoke=revoked, on_lost=lost)
            while not self._stopping.is_set():
                message = consumer.poll(0.5)
                error = None if message is None else message.error()
                if error is not None:
                    log.debug("election on %s: %s", self.alias, error.str())
                if self._rejoin.is_set():  # a newer leader wrote its epoch: give the seat up
                    self._rejoin.clear()
                    return
                if lost_at and time.monotonic() - lost_at[0] > REJOIN_S:
                    log.warning(
                        "election on %s: no assignment %.0f s after losing it; joining "
                        "group %s again",
                        self.alias,
                        REJOIN_S,
                        self.group,
                    )
                    return
        finally:
            self._set(False)
            consumer.close()  # leaves the group at once: a standby takes over without waiting

    def rejoin(self) -> None:
        """Leave the group and join again as a new member: the lead goes to another member."""
        self._rejoin.set()

    def stop(self, timeout: float = 5.0) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout)
