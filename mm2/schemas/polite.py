"""How the schema sync stays polite to a registry: a steady request rate and `Retry-After`.

A self-managed Schema Registry has no server-side limit, but Confluent Cloud answers 429 (and
a registry behind a proxy 503) with `Retry-After`, which neither Confluent client honours. The
sync polls every second, so it spaces its requests evenly instead of bursting a whole pass at
once, and waits as long as a registry asks before trying again.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

__all__ = ["RateLimiter", "retry_after_seconds"]


class RateLimiter:
    """At most `rate` request starts per second, spaced evenly (no bursts after an idle
    pause: a registry sees a trickle, never a storm). A rate of 0 or less means no limit."""

    def __init__(
        self,
        rate: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._gap = 1.0 / rate if rate > 0 else 0.0
        self._clock = clock
        self._sleep = sleep
        self._next = float("-inf")

    def wait(self) -> None:
        """Return when the next request may start."""
        now = self._clock()
        if now < self._next:
            self._sleep(self._next - now)
            now = self._next
        self._next = now + self._gap


def retry_after_seconds(value: str | None, *, now: datetime | None = None) -> float | None:
    """The seconds a `Retry-After` header asks for (delay-seconds or an HTTP-date); None when
    there is none or it does not parse. A date in the past is 0."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    if text.isdigit():
        return float(text)
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())
