"""Pure figures: percentiles, rates from arrival curves, ratios and the targets' verdicts."""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = [
    "latency_summary",
    "percentile",
    "percentile_curve",
    "rate_between",
    "ratio",
    "steady_rate",
]


def percentile(values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile (q in 0..100) of values; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100.0 * len(ordered)))
    return float(ordered[min(rank, len(ordered)) - 1])


def latency_summary(values: Sequence[float]) -> dict[str, float | int | None]:
    """p50, p95, p99 (nearest rank), max and the number of samples; None figures for none."""
    summary: dict[str, float | int | None] = {
        name: percentile(values, q) for name, q in (("p50", 50), ("p95", 95), ("p99", 99))
    }
    summary["max"] = float(max(values)) if values else None
    summary["samples"] = len(values)
    return summary


def percentile_curve(values: Sequence[float]) -> list[tuple[float, float]]:
    """(percentile, value) at 1% steps plus the tail (99.5, 99.9, 100): a plot's line."""
    if not values:
        return []
    ordered = sorted(values)
    qs = [*range(1, 100), 99.5, 99.9, 100]
    return [(float(q), percentile(ordered, q) or 0.0) for q in qs]


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or denominator is None or denominator == 0:
        return None
    return numerator / denominator


def rate_between(curve: Sequence[tuple[float, int]], total: int) -> tuple[float, float] | None:
    """(first-arrival time, all-arrived time) from an arrival curve of (seconds, records).

    The window starts at the last sample that still showed nothing, so start-up (JVMs, Spark,
    discovery) is left out of the throughput and reported apart.
    """
    first = None
    done = None
    previous = None
    for t, n in curve:
        if first is None and n > 0:
            first = previous if previous is not None else t
        if done is None and n >= total:
            done = t
            break
        if n == 0:
            previous = t
    if first is None or done is None:
        return None
    return first, done


def steady_rate(records: int, window: tuple[float, float] | None) -> float | None:
    if window is None:
        return None
    seconds = window[1] - window[0]
    return None if seconds <= 0 else records / seconds
