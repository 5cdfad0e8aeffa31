"""Both orders (`--both-orders`): the whole run again with the systems reversed, side by side.

The system that runs second in a workload shares the machine with what the first left behind
(the brokers' page cache and log cleaning, their JIT-compiled code, a warmer Spark): in this
project's runs W2's p99 moved by up to 6.5x with the order alone (BENCHMARKS.md, "Known limits
of the harness"). A difference that holds in both orders is the systems'; one that swaps with
the order is the harness's.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from bench.report import Row, figure, ratio_text, rows, workload_key
from bench.settings import Settings
from bench.stats import ratio
from bench.systems import LABELS, SystemName

__all__ = ["ORDERS_NOTE", "orders_markdown", "reversed_run", "target_cells"]

ORDERS_NOTE = (
    "Both orders (`--both-orders`): the same run twice, the second with the systems in the "
    "reverse order (its own results in the `-reversed` folder). Each figure is given for both "
    "runs; the ratio's geometric mean weighs the two orders alike. A target is met in both "
    "orders, in one, or in neither."
)


def reversed_run(settings: Settings) -> Settings:
    """The second run: the systems in the reverse order, results under `<label>-reversed`."""
    return replace(
        settings, systems=tuple(reversed(settings.systems)), label=f"{settings.label}-reversed"
    )


def _compared(systems: Sequence[SystemName]) -> tuple[SystemName, SystemName]:
    """The pair whose ratio the table gives: mm2 / Apache MM2 when both ran, else the first two."""
    if "mm2" in systems and "apache" in systems:
        return "mm2", "apache"
    return systems[0], systems[1]


def _result(results: Mapping[str, Any], row: Row, system: SystemName) -> Mapping[str, Any]:
    """A system's results in a row's workload ({} when it did not run it)."""
    block = results.get(workload_key(row))
    found = block.get(system) if isinstance(block, Mapping) else None
    return found if isinstance(found, Mapping) else {}


def _value(results: Mapping[str, Any], row: Row, system: SystemName) -> float | None:
    return row.get(_result(results, row, system))


def _geometric_mean(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or a <= 0 or b <= 0:
        return None
    return math.sqrt(a * b)


def _met(row: Row, runs: Sequence[Mapping[str, Any]]) -> str:
    """Whether the row's target (mm2 against Apache MM2) was met in both runs, one, or none."""
    if row.check is None:
        return ""
    verdicts = [row.check(_value(r, row, "mm2"), _value(r, row, "apache"), r) for r in runs]
    if any(v is None for v in verdicts):
        return "n/a"
    return {len(runs): "both orders", 0: "**neither**"}.get(sum(map(bool, verdicts)), "one order")


def orders_markdown(
    systems: Sequence[SystemName], first: Mapping[str, Any], second: Mapping[str, Any]
) -> str:
    """Each figure of both runs (`systems` in the order of the first), the ratio of the compared
    pair in each and its geometric mean, and each target's verdict over both orders."""
    if len(systems) < 2:
        raise ValueError("both orders need two systems or more")
    ours, theirs = _compared(systems)
    orders = [f"{LABELS[systems[0]]} first", f"{LABELS[systems[-1]]} first"]
    heads = [f"{LABELS[s]}, {order}" for s in systems for order in orders]
    pair = f"{LABELS[ours]} / {LABELS[theirs]}"
    lines = [
        ORDERS_NOTE,
        "",
        "| workload | metric | " + " | ".join(heads) + f" | {pair}, {orders[0]} | "
        f"{pair}, {orders[1]} | {pair}, geometric mean | target | met in |",
        "|---|---|" + "---:|" * (len(heads) + 3) + "---|---|",
    ]
    runs = (first, second)
    for row in rows():
        shown = [_result(r, row, s) for s in systems for r in runs]
        if all(row.get(s) is None for s in shown):
            continue
        ratios = [ratio(_value(r, row, ours), _value(r, row, theirs)) for r in runs]
        cells = [figure(row, s) for s in shown]
        cells += [ratio_text(r) for r in ratios]
        cells.append(ratio_text(_geometric_mean(*ratios)))
        lines.append(
            f"| {row.workload} | {row.label} ({row.unit}) | " + " | ".join(cells) + f" | "
            f"{row.target} | {_met(row, runs)} |"
        )
    return "\n".join(lines) + "\n"


def target_cells(row: Row, first: Mapping[str, Any], second: Mapping[str, Any]) -> list[str] | None:
    """A target row over both orders (mm2 first, then Apache MM2 first): mm2's two figures,
    Apache MM2's two, the ratio's geometric mean, the target and where it was met; None when
    neither run measured it."""
    runs = (first, second)
    if all(_value(r, row, s) is None for r in runs for s in ("mm2", "apache")):
        return None
    mean = _geometric_mean(*(ratio(_value(r, row, "mm2"), _value(r, row, "apache")) for r in runs))
    return [
        " / ".join(figure(row, _result(r, row, "mm2")) for r in runs),
        " / ".join(figure(row, _result(r, row, "apache")) for r in runs),
        ratio_text(mean),
        row.target,
        _met(row, runs),
    ]
