"""Transactions left open on the target: a partition whose last stable offset stays behind its
end holds every read_committed reader back (the apps reading the remote topics, and the mirror
reading its own positions).

Copy tasks end their transactions every `transaction.boundary.interval.ms` (100 ms by default),
so a last stable offset that has not moved for `HANGING_S` seconds while records lie beyond it
is a transaction nobody ends: a copy task cut off mid-transaction waits for its transaction
timeout, and one whose markers the broker skipped (a one-broker Kafka 4.4 coming back, see
docs/operations.md) waits for ever. Found here per partition, each with the offset the
transaction starts at, which is what `kafka-transactions.sh abort --start-offset` wants.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from mm2.kafka.offsets import OffsetLister
from mm2.records import TP

__all__ = ["HANGING_S", "OpenTransaction", "OpenTransactions"]

HANGING_S = 60.0


@dataclass(frozen=True)
class OpenTransaction:
    """A partition held back since `start` (its last stable offset) for `seconds`."""

    topic: str
    partition: int
    start: int
    end: int
    seconds: float


class OpenTransactions:
    """Follows the last stable offsets of a cluster's partitions between calls."""

    def __init__(self, admin_config: Mapping[str, str], *, timeout: float = 5.0) -> None:
        self._lister = OffsetLister(admin_config, timeout=timeout)
        self._since: dict[TP, tuple[int, float]] = {}

    def check(self, partitions: Iterable[TP], *, now: float | None = None) -> list[OpenTransaction]:
        """The partitions held back for `HANGING_S` seconds or more (raises KafkaClientError
        when the offsets cannot be read)."""
        wanted = sorted(set(partitions))
        stable = self._lister.offsets(wanted, latest=True, read_committed=True)
        ends = self._lister.offsets(wanted, latest=True, read_committed=False)
        now = time.monotonic() if now is None else now
        since: dict[TP, tuple[int, float]] = {}
        found = []
        for tp in wanted:
            lso, end = stable.get(tp), ends.get(tp)
            if lso is None or end is None or lso >= end:
                continue
            last = self._since.get(tp)
            since[tp] = last if last is not None and last[0] == lso else (lso, now)
            held = now - since[tp][1]
            if held >= HANGING_S:
                found.append(OpenTransaction(tp[0], tp[1], lso, end, held))
        self._since = since
        return found
