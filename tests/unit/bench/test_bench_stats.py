"""bench.stats: percentiles, throughput windows from arrival curves, ratios."""

from __future__ import annotations

import pytest

from bench.stats import (
    latency_summary,
    percentile,
    percentile_curve,
    rate_between,
    ratio,
    steady_rate,
)


def test_percentile_nearest_rank() -> None:
    values = list(range(1, 101))  # 1..100
    assert percentile(values, 50) == 50
    assert percentile(values, 99) == 99
    assert percentile(values, 100) == 100
    assert percentile(values, 0) == 1
    assert percentile([7], 99) == 7


def test_percentile_ignores_input_order_and_handles_empty() -> None:
    assert percentile([30, 10, 20], 50) == 20
    assert percentile([], 50) is None


def test_rate_window_leaves_start_up_out() -> None:
    # Nothing for 10 s (start-up), then 1000 records per second until 3000 arrived.
    curve = [(0.0, 0), (5.0, 0), (10.0, 0), (11.0, 1000), (12.0, 2000), (13.0, 3000)]
    window = rate_between(curve, 3000)
    assert window == (10.0, 13.0)
    assert steady_rate(3000, window) == pytest.approx(1000.0)


def test_rate_window_is_none_until_everything_arrived() -> None:
    assert rate_between([(0.0, 0), (1.0, 10)], 20) is None
    assert steady_rate(20, None) is None


def test_rate_window_when_records_are_there_at_the_first_sample() -> None:
    assert rate_between([(0.5, 100), (1.0, 200)], 200) == (0.5, 1.0)


def test_ratio() -> None:
    assert ratio(3.0, 2.0) == 1.5
    assert ratio(None, 2.0) is None
    assert ratio(1.0, 0.0) is None


def test_latency_summary_nearest_rank_max_and_samples() -> None:
    values = [float(v) for v in range(100, 0, -1)]  # 100..1, unsorted
    assert latency_summary(values) == {
        "p50": 50.0,
        "p95": 95.0,
        "p99": 99.0,
        "max": 100.0,
        "samples": 100,
    }


def test_latency_summary_of_nothing_has_no_figures_but_counts_zero() -> None:
    assert latency_summary([]) == {
        "p50": None,
        "p95": None,
        "p99": None,
        "max": None,
        "samples": 0,
    }


def test_percentile_curve_steps_and_tail() -> None:
    values = list(range(1000, 0, -1))  # 1..1000
    curve = percentile_curve(values)
    assert len(curve) == 99 + 3
    assert curve[0] == (1.0, 10.0)
    assert curve[49] == (50.0, 500.0)
    assert [q for q, _ in curve[-3:]] == [99.5, 99.9, 100.0]
    assert curve[-3][1] == 995.0
    assert curve[-1][1] == 1000.0
    assert curve == [(q, percentile(values, q)) for q, _ in curve]
    assert percentile_curve([]) == []
