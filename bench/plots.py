"""PNG plots with matplotlib: W1 arrival curves and throughput, W2 latency percentiles.

W2's bars are the append latency (read_uncommitted), as always; the percentile panel adds the
committed latency (read_committed) as dashed lines.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt

__all__ = ["plot_all"]

_COLORS = {
    "mm2": "tab:blue",
    "mm2-at-least-once": "tab:green",
    "mm2-schemas": "tab:purple",
    "apache": "tab:orange",
    "apache-exactly-once": "tab:red",
}
_NAMES = {
    "mm2": "mm2",
    "mm2-at-least-once": "mm2, exactly-once off",
    "mm2-schemas": "mm2, schema IDs translated",
    "apache": "Apache MM2",
    "apache-exactly-once": "Apache MM2, exactly-once",
}


def _rates(curve: Sequence[Sequence[float]]) -> tuple[list[float], list[float]]:
    """Records/s between consecutive samples of an arrival curve."""
    times, rates = [], []
    for (t0, n0), (t1, n1) in itertools.pairwise(curve):
        if t1 > t0:
            times.append(t1)
            rates.append((n1 - n0) / (t1 - t0))
    return times, rates


def _throughput(w1: Mapping[str, Any], ceiling: Mapping[str, Any] | None, path: Path) -> Path:
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    for system, res in w1.items():
        curve = res.get("curve") or []
        if not curve:
            continue
        left.plot(
            [c[0] for c in curve],
            [c[1] for c in curve],
            label=_NAMES.get(system, system),
            color=_COLORS.get(system),
        )
        times, rates = _rates(curve)
        right.plot(times, rates, label=_NAMES.get(system, system), color=_COLORS.get(system))
    if ceiling and ceiling.get("ceiling_records_per_s"):
        right.axhline(
            ceiling["ceiling_records_per_s"], color="grey", linestyle="--", label="ceiling"
        )
    left.set(
        title="W1 backlog: records on the target", xlabel="s since mirror start", ylabel="records"
    )
    right.set(title="W1 throughput", xlabel="s since mirror start", ylabel="records/s")
    left.legend()
    right.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _latency(w2: Mapping[str, Any], path: Path) -> Path:
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    names = ["p50", "p95", "p99", "max"]
    width = 0.76 / max(1, len(w2))
    for i, (system, res) in enumerate(w2.items()):
        lat = res.get("latency_ms") or {}
        values = [lat.get(n) or 0.0 for n in names]
        xs = [x + (i - (len(w2) - 1) / 2) * width for x in range(len(names))]
        left.bar(xs, values, width, label=_NAMES.get(system, system), color=_COLORS.get(system))
        name = _NAMES.get(system, system)
        hist = res.get("latency_hist") or []
        if hist:
            right.plot(
                [h[0] for h in hist],
                [h[1] for h in hist],
                label=f"{name}, append",
                color=_COLORS.get(system),
            )
        committed = res.get("committed_latency_hist") or []
        if committed:
            right.plot(
                [h[0] for h in committed],
                [h[1] for h in committed],
                label=f"{name}, committed",
                color=_COLORS.get(system),
                linestyle="--",
            )
    left.set_xticks(range(len(names)), names)
    left.set(title="W2 append latency (read_uncommitted)", ylabel="ms", yscale="log")
    right.set(
        title="W2 latency by percentile (dashed: committed)",
        xlabel="percentile",
        ylabel="ms",
        yscale="log",
    )
    left.legend()
    right.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def plot_all(results: Mapping[str, Any], folder: Path) -> list[Path]:
    out = []
    if isinstance(results.get("w1"), Mapping):
        out.append(_throughput(results["w1"], results.get("ceiling"), folder / "w1_throughput.png"))
    if isinstance(results.get("w2"), Mapping):
        out.append(_latency(results["w2"], folder / "w2_latency.png"))
    return out
