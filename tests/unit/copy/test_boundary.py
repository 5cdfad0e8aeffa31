"""mm2.copy.boundary: the interval when caught up; under a backlog, long enough that ending a
transaction is a small share of it, within a bound."""

from __future__ import annotations

from mm2.copy.boundary import ENDING_SHARE, MAX_INTERVALS, Boundary, behind


def test_caught_up_the_interval_holds_whatever_the_ending_took() -> None:
    b = Boundary(100)
    b.ended(ending_ms=300, behind=False)
    assert b.current_ms == 100 and not b.due(99) and b.due(100)


def test_under_a_backlog_a_slow_ending_makes_the_next_transaction_longer() -> None:
    b = Boundary(100)
    b.ended(ending_ms=60, behind=True)  # a 50 ms link: ids and commit round trips
    assert b.current_ms == ENDING_SHARE * 60
    assert not b.due(ENDING_SHARE * 60 - 1)
    b.ended(ending_ms=5, behind=True)  # a fast ending: never below the interval
    assert b.current_ms == 100
    b.ended(ending_ms=10_000, behind=True)  # never beyond the bound
    assert b.current_ms == MAX_INTERVALS * 100
    b.ended(ending_ms=10_000, behind=False)  # caught up again: back to the interval
    assert b.current_ms == 100


def test_a_backlog_is_more_left_than_copied() -> None:
    assert behind(lag=5_000, copied=1_000)
    assert not behind(lag=3, copied=500)  # steady flow: a fetch's worth behind
    assert not behind(lag=10, copied=0)  # nothing copied: nothing to judge by
