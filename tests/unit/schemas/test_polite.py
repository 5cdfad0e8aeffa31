"""The schema sync's manners: an even request rate and the waits `Retry-After` asks for."""

from __future__ import annotations

from datetime import UTC, datetime

from mm2.schemas.polite import RateLimiter, retry_after_seconds


class Clock:
    """A clock that moves only when slept on."""

    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.slept.append(round(seconds, 6))
        self.now += seconds


def test_requests_are_spaced_evenly_and_an_idle_pause_gives_no_burst() -> None:
    clock = Clock()
    limiter = RateLimiter(4, clock=lambda: clock.now, sleep=clock.sleep)
    for _ in range(3):
        limiter.wait()
    assert clock.slept == [0.25, 0.25]
    clock.now += 10  # idle: the next request goes at once, the one after waits again
    limiter.wait()
    limiter.wait()
    assert clock.slept == [0.25, 0.25, 0.25]


def test_no_rate_means_no_wait() -> None:
    clock = Clock()
    limiter = RateLimiter(0, clock=lambda: clock.now, sleep=clock.sleep)
    for _ in range(5):
        limiter.wait()
    assert clock.slept == []


def test_retry_after_in_seconds_or_as_a_date() -> None:
    now = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert retry_after_seconds("7") == 7.0
    assert retry_after_seconds(" 0 ") == 0.0
    assert retry_after_seconds("Fri, 02 Jan 2026 03:04:35 GMT", now=now) == 30.0
    assert retry_after_seconds("Fri, 02 Jan 2026 03:00:00 GMT", now=now) == 0.0  # past
    assert retry_after_seconds(None) is None
    assert retry_after_seconds("soon") is None
    assert retry_after_seconds("") is None
