"""Every: a repeating deadline for the periodic work of a task's poll loop."""

from __future__ import annotations

import time

__all__ = ["Every"]


class Every:
    """Due every `seconds` (never when None), first after `first_after` seconds."""

    def __init__(self, seconds: float | None, *, first_after: float = 0.0) -> None:
        self.seconds = seconds
        self.next = time.monotonic() + first_after

    def due(self, now: float) -> bool:
        if self.seconds is None or now < self.next:
            return False
        self.next = now + self.seconds
        return True
