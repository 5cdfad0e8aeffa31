"""A transaction left open while copy tasks run: seen, and ended by a new copy epoch.

The planner ends what earlier copy tasks left open when it settles, before each epoch
(mm2.copy.fencing.end_left_open). A broker can also leave a transaction open while an epoch
runs: a partition leader that stops as a commit's markers are written, so that one partition
never gets its marker, and the copy task that owns it never writes there again (its partitions
moved, or it stopped writing to it). The copy tasks then keep copying, their positions keep
moving, and every read_committed reader of that partition waits for good.

`LeftOpenWatch` asks, every `every_s`, which partitions of the offsets topic and the remote
topics have a last stable offset behind their end. One held at the same offset for longer than
`patience_s` (longer than any transaction of the copy tasks can stay open: their
transaction.timeout.ms, after which the coordinator aborts it, plus a margin) is `due`: the
planner starts a new epoch, whose settle fences the copy tasks and ends it. A partition is due
once per offset: one a new epoch did not free is held by a producer that is not the flow's, and
is left to the operator (the flow shows it, and the MirrorMakerTransactionHanging alert fires).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence

from mm2.errors import MM2Error
from mm2.records import TP

__all__ = ["LeftOpenWatch"]

log = logging.getLogger(__name__)

# The partitions of these topics held back, each with its last stable offset.
Probe = Callable[[Sequence[str]], Mapping[TP, int]]


class LeftOpenWatch:
    """Partitions held back at one offset for longer than `patience_s`, each said once."""

    def __init__(
        self,
        probe: Probe,
        *,
        patience_s: float,
        every_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
        flow: str = "",
    ) -> None:
        self._probe = probe
        self._patience = patience_s
        self._every = every_s
        self._clock = clock
        self._flow = flow
        self._next = clock() + every_s
        self._since: dict[tuple[TP, int], float] = {}  # (partition, offset) -> first seen held
        self._said: set[tuple[TP, int]] = set()

    def due(self, topics: Sequence[str]) -> dict[TP, int]:
        """The partitions of `topics` held back at one offset for longer than the patience and
        not said before, with that offset; {} between two looks or when the look fails."""
        now = self._clock()
        if now < self._next:
            return {}
        self._next = now + self._every
        try:
            held = self._probe(topics)
        except MM2Error as exc:  # an outage: the next look asks again
            log.debug("%s: looking for transactions left open failed: %s", self._flow, exc)
            return {}
        self._since = {k: self._since.get(k, now) for k in held.items()}
        found = {
            tp: at
            for (tp, at), since in self._since.items()
            if now - since >= self._patience and (tp, at) not in self._said
        }
        self._said.update(found.items())
        return found
