"""When a copy task's open transaction ends: `transaction.boundary.interval.ms`, longer under a
backlog.

Ending a transaction stops the copy loop: the flush waits for the target's acknowledgements,
the source answers the topics' ids (mm2.copy.loop), the commit goes to the target's
coordinator. On one host that takes about a fifth of the 100 ms default; across a link each of
those round trips costs the link's round trip, and at 50 ms the loop spent more time ending
transactions than copying (the bench's W6: 15,800 records/s at the default, 38,200 at 1 s).
Under a backlog the lag is seconds anyway and the interval decides only how often the loop
stops, so there a transaction lasts at least ENDING_SHARE times its last ending, up to
MAX_INTERVALS intervals. Caught up, records wait for the boundary, so the interval holds.
"""

from __future__ import annotations

__all__ = ["ENDING_SHARE", "MAX_INTERVALS", "Boundary", "behind"]

ENDING_SHARE = 5  # under a backlog, ending a transaction takes at most a fifth of its life
MAX_INTERVALS = 10  # and a transaction lasts at most ten intervals


class Boundary:
    """How old the open transaction may grow before it ends."""

    def __init__(self, interval_ms: int) -> None:
        self.interval_ms = interval_ms
        self.current_ms = float(interval_ms)

    def due(self, age_ms: float) -> bool:
        return age_ms >= self.current_ms

    def ended(self, ending_ms: float, behind: bool) -> None:
        """A transaction ended, taking `ending_ms`; `behind`: the source had more than the
        transaction copied still to read (a backlog)."""
        if not behind:
            self.current_ms = float(self.interval_ms)
            return
        wanted = max(self.interval_ms, ENDING_SHARE * ending_ms)
        self.current_ms = min(wanted, MAX_INTERVALS * self.interval_ms)


def behind(lag: int, copied: int) -> bool:
    """Whether a transaction that copied `copied` records left a backlog: more records than it
    copied still on the source past the positions (`lag`, from the consumer's last fetch)."""
    return copied > 0 and lag > copied
