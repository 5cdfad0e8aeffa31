"""Partitions a copy task's consumer stopped fetching without saying so.

A partition assigned at a position with its leader epoch is validated first (OffsetForLeaderEpoch)
and a partition without a position asks for one (ListOffsets). When the source broker goes away
while such a request is in flight, librdkafka can leave the partition waiting for an answer that
never comes (`validate-epoch-wait`, librdkafka issue 4492): no error, no records, forever. Seen
here: a source broker stopped two seconds after a copy epoch started left both copy tasks' topic
partitions silent after the broker came back, while the heartbeats partition, assigned without
an epoch, went on.

The consumer's statistics (`statistics.interval.ms`, every STATS_INTERVAL_MS) say each
partition's fetch state. A partition that waits in one of those states longer than STUCK_S is
handed to the copy loop, which assigns it again from its last commit: a new validation that an
answering broker completes at once. During an outage this only asks again, which is harmless.

They also say each partition's leader. A fetch answered while the source broker starts up can
name no leader (-1) for a partition, and librdkafka then keeps the partition without a leader
for good (librdkafka issue 5430: later metadata with the leader does not repair its cache): the
client never fetches it again. A partition without a leader for longer than STUCK_S is handed
to the copy loop, which asks the cluster; when the cluster names a leader, the client is beyond
repair and the copy task starts again with new clients. During an outage the cluster names
none, and nothing happens.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable

from mm2.records import TP

__all__ = ["STATS_INTERVAL_MS", "STUCK_S", "FetchStates"]

log = logging.getLogger(__name__)

STATS_INTERVAL_MS = 10_000
STUCK_S = 45.0
# librdkafka's fetch states of a partition that waits for an answer before it fetches.
_WAITING = frozenset({"validate-epoch-wait", "offset-query", "offset-wait"})


class FetchStates:
    """The consumer's `stats_cb`: when each partition entered the waiting state it is in."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._waiting_since: dict[TP, tuple[str, float]] = {}
        self._leaderless_since: dict[TP, float] = {}

    def __call__(self, stats: str) -> None:
        """One statistics document of the consumer (JSON, librdkafka's STATISTICS.md)."""
        try:
            topics = json.loads(stats).get("topics", {})
        except ValueError:
            return
        now, seen, leaderless = self._clock(), {}, {}
        for topic, body in topics.items():
            for key, partition in body.get("partitions", {}).items():
                state, number = partition.get("fetch_state"), int(key)
                if number < 0 or not partition.get("desired", True):
                    continue
                tp = (topic, number)
                if partition.get("leader", 0) < 0:
                    leaderless[tp] = self._leaderless_since.get(tp, now)
                if state not in _WAITING:
                    continue
                known = self._waiting_since.get(tp)
                seen[tp] = known if known is not None and known[0] == state else (state, now)
        self._waiting_since = seen
        self._leaderless_since = leaderless

    def stuck(self, longer_than: float = STUCK_S) -> dict[TP, str]:
        """The partitions waiting in one state longer than `longer_than` seconds, and that
        state; each is reported once (it must be assigned again before it counts anew)."""
        now = self._clock()
        found = {
            tp: state
            for tp, (state, since) in self._waiting_since.items()
            if now - since > longer_than
        }
        for tp in found:
            del self._waiting_since[tp]
        return found

    def leaderless(self, longer_than: float = STUCK_S) -> list[TP]:
        """The partitions the consumer has known no leader of for longer than `longer_than`
        seconds; each is reported once per `longer_than` (its clock starts again)."""
        now = self._clock()
        found = sorted(
            tp for tp, since in self._leaderless_since.items() if now - since > longer_than
        )
        for tp in found:
            self._leaderless_since[tp] = now
        return found
