"""Two transactional producers of one copy task, taking turns: a commit never stops the copy.

With one producer, every transaction's end held the copy loop: flush, EndTxn, and then the
next transaction's first records waited on the target's coordinator, which refuses to add
partitions to a producer's new transaction (CONCURRENT_TRANSACTIONS, retried every 20 ms by
librdkafka) until the markers of its last one are written. The records read meanwhile waited
in the consumer's queue: that was the tail of W2's latency (docs/architecture.md).

Here a copy task holds two producers on two transactional ids, `<id>` (Connect's, so Apache
MM2's own tasks and mm2's fence each other) and `<id>-alt`. At a boundary the loop flushes the
open transaction (its records are in the target's log, ahead of anything produced after), hands
its commit to a thread, and goes on copying into a transaction of the other producer, whose
last commit has long finished. Two rules keep exactly-once and the order of records:

- at most one commit is in flight: the next boundary waits for it before handing over its own
  transaction, so transactions commit in the order their records were written;
- a commit that fails takes the transaction behind it along: that one is aborted too, and the
  copy starts again from the last committed positions (its records come after the failed ones
  in the log, so committing them alone would leave a gap).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Generic, TypeVar

from mm2.copy.transaction import TransactionSink

__all__ = ["ALTERNATE_SUFFIX", "Turns", "transactional_ids"]

log = logging.getLogger(__name__)

ALTERNATE_SUFFIX = "-alt"

T = TypeVar("T")


def transactional_ids(base: str) -> list[str]:
    """Both transactional ids a copy task with id `base` commits under; a planner fences both."""
    return [base, base + ALTERNATE_SUFFIX]


class Turns(Generic[T]):
    """The producer that takes the next records (`active`) and the commit in flight, if any,
    of the other one, with what it carried (a T: the loop's transaction)."""

    def __init__(self, sinks: Sequence[TransactionSink]) -> None:
        if not sinks:
            raise ValueError("Turns needs a producer")
        self._sinks = list(sinks)
        self._turn = 0
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="commit")
        self._in_flight: tuple[Future[None], TransactionSink, T] | None = None

    @property
    def active(self) -> TransactionSink:
        return self._sinks[self._turn]

    @property
    def sinks(self) -> list[TransactionSink]:
        return list(self._sinks)

    def in_flight(self) -> bool:
        return self._in_flight is not None

    def hand_over(self, carried: T) -> None:
        """Commit the active producer's transaction (flushed already) in the background and make
        the other producer the active one. Only with no commit in flight (settle first)."""
        if self._in_flight is not None:
            raise RuntimeError("a commit is in flight: settle it before handing over another")
        sink = self.active
        if len(self._sinks) == 1:  # one producer: commit here, nothing to overlap with
            done: Future[None] = Future()
            try:
                sink.commit()
                done.set_result(None)
            except Exception as exc:  # noqa: BLE001 - handed to settle(), as a thread's would be
                done.set_exception(exc)
            self._in_flight = (done, sink, carried)
            return
        self._in_flight = (self._pool.submit(sink.commit), sink, carried)
        self._turn = (self._turn + 1) % len(self._sinks)

    def settle(
        self, *, wait: bool = True
    ) -> tuple[T, TransactionSink, BaseException | None] | None:
        """The commit in flight once it has ended: what it carried, its producer, and its error
        (None: committed). None when nothing is in flight, or (wait=False) it has not ended."""
        if self._in_flight is None:
            return None
        future, sink, carried = self._in_flight
        if not wait and not future.done():
            return None
        self._in_flight = None
        return carried, sink, future.exception()

    def close(self) -> None:
        """Let a commit in flight end (its own calls are bounded), then stop the thread."""
        self._pool.shutdown(wait=True)
