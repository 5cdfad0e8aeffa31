"""offset_runs: (upstream, downstream) pairs compressed into runs where both advance by one."""

from __future__ import annotations

from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mm2.offset_syncs.sync_trail import offset_runs


def expand(runs: list[tuple[int, int, int]]) -> list[tuple[int, int]]:
    return [(u + i, d + i) for u, d, n in runs for i in range(n)]


def test_a_contiguous_copy_is_one_run() -> None:
    assert offset_runs(range(10, 20), range(500, 510)) == [(10, 500, 10)]
    assert offset_runs([], []) == []


def test_gaps_on_either_side_start_a_new_run() -> None:
    assert offset_runs([1, 2, 4, 5], [7, 8, 9, 10]) == [(1, 7, 2), (4, 9, 2)]
    assert offset_runs([1, 2, 3], [7, 9, 10]) == [(1, 7, 1), (2, 9, 2)]


def test_unequal_lengths_are_refused() -> None:
    with pytest.raises(ValueError, match="3 upstream offsets but 2 downstream"):
        offset_runs([1, 2, 3], [1, 2])


@given(st.lists(st.tuples(st.integers(1, 3), st.integers(1, 3)), max_size=60))
def test_runs_hold_exactly_the_pairs_and_are_maximal(steps: list[tuple[int, int]]) -> None:
    ups, downs, u, d = [], [], 0, 0
    for du, dd in steps:
        u, d = u + du, d + dd
        ups.append(u)
        downs.append(d)
    runs = offset_runs(ups, downs)
    assert expand(runs) == list(zip(ups, downs, strict=True))
    for (u0, d0, n), (u1, d1, _) in pairwise(runs):
        assert (u1, d1) != (u0 + n, d0 + n)  # a run that could go on does
