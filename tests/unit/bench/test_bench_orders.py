"""bench.orders: the run in both orders, each figure of both, the ratios and the verdicts."""

from __future__ import annotations

from typing import Any

import pytest

from bench.orders import orders_markdown, reversed_run
from bench.settings import parse_args


def _w2(ours_p99: float, theirs_p99: float) -> dict[str, Any]:
    return {
        "w2": {
            "mm2": {"latency_ms": {"p50": 10.0, "p95": 50.0, "p99": ours_p99}},
            "apache": {"latency_ms": {"p50": 8.0, "p99": theirs_p99}},
        }
    }


def _row(table: str, metric: str) -> list[str]:
    line = next(ln for ln in table.splitlines() if f"| {metric}" in ln)
    return [c.strip() for c in line.strip("|").split("|")]


def test_the_second_run_reverses_the_systems_and_has_its_own_label() -> None:
    settings = parse_args(["--systems", "mm2,apache", "--label", "x", "--both-orders"])
    again = reversed_run(settings)
    assert (
        settings.both_orders and again.systems == ("apache", "mm2") and again.label == "x-reversed"
    )


def test_both_orders_needs_two_systems() -> None:
    with pytest.raises(SystemExit):
        parse_args(["--systems", "mm2", "--both-orders"])


def test_each_figure_of_both_runs_ratios_and_their_geometric_mean() -> None:
    # mm2 first: mm2's p99 200 against Apache's 400; Apache first: 800 against 200.
    table = orders_markdown(("mm2", "apache"), _w2(200.0, 400.0), _w2(800.0, 200.0))
    heads = _row(table, "workload")
    assert heads[2:6] == [
        "mm2 (this project), mm2 (this project) first",
        "mm2 (this project), Apache MM2 first",
        "Apache MM2, mm2 (this project) first",
        "Apache MM2, Apache MM2 first",
    ]
    row = _row(table, "append latency (read_uncommitted) p99")
    assert row[2:9] == ["200", "800", "400", "200", "0.50", "4.00", "1.41"]
    # <= Apache: met with mm2 first only.
    assert row[-1] == "one order"


def test_a_target_met_in_both_orders_or_in_neither() -> None:
    both = orders_markdown(("mm2", "apache"), _w2(100.0, 400.0), _w2(90.0, 300.0))
    assert _row(both, "append latency (read_uncommitted) p99")[-1] == "both orders"
    neither = orders_markdown(("mm2", "apache"), _w2(600.0, 400.0), _w2(900.0, 300.0))
    assert _row(neither, "append latency (read_uncommitted) p99")[-1] == "**neither**"
    # A metric no run measured is left out; one without a target has no verdict.
    assert "throughput" not in neither
    assert _row(neither, "append latency (read_uncommitted) p95")[-1] == ""


def test_without_apache_the_first_two_systems_are_compared() -> None:
    first = {
        "w2": {"mm2": {"latency_ms": {"p50": 4.0}}, "mm2-schemas": {"latency_ms": {"p50": 6.0}}}
    }
    table = orders_markdown(("mm2-schemas", "mm2"), first, first)
    row = _row(table, "append latency (read_uncommitted) p50")
    assert row[2:9] == ["6.00", "6.00", "4.00", "4.00", "1.50", "1.50", "1.50"]
    assert row[-1] == "n/a"  # the target is held against Apache MM2, which did not run
