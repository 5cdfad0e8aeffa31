"""BENCHMARKS.md's headline: every target row of the runs `make bench-headline` makes, in one
table (`python -m bench.headline [LABEL] [--out DIR]`).

Each run was made in both orders: `<LABEL>-local` (W1 and W2 on fresh pairs of clusters),
`<LABEL>-link-50` and `<LABEL>-link-100-100` (the same across a link) and `<LABEL>-w7`, each
beside its `-reversed` twin. A figure reads "mm2 first / Apache MM2 first".
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.orders import target_cells
from bench.report import rows

__all__ = ["RUNS", "headline_markdown", "main"]

# (label suffix, where the run was): the runs of `make bench-headline`, in its order.
RUNS = (
    ("local", "one machine"),
    ("link-50", "across a 50 ms link"),
    ("link-100-100", "across a 100 ms link, 100 Mbit/s"),
    ("w7", "twelve flows"),
)


def _load(folder: Path) -> dict[str, Any] | None:
    path = folder / "results.json"
    if not path.exists():
        return None
    loaded: dict[str, Any] = json.loads(path.read_text())
    return loaded


def _mm2_first(a: dict[str, Any], b: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The two runs, the one where mm2 ran first first."""
    systems = str(a.get("meta", {}).get("settings", {}).get("systems", ""))
    return (a, b) if systems.find("mm2") < systems.find("apache") else (b, a)


def headline_markdown(out: Path, label: str) -> str:
    lines = [
        "| where | metric | mm2 | Apache MM2 | mm2 / Apache | target | met in |",
        "|---|---|---:|---:|---:|---|---|",
    ]
    commands = []
    for suffix, where in RUNS:
        a, b = _load(out / f"{label}-{suffix}"), _load(out / f"{label}-{suffix}-reversed")
        if a is None or b is None:
            continue
        commands.append(str(a.get("meta", {}).get("command", "")))
        first, second = _mm2_first(a, b)
        for row in rows():
            if row.check is None:
                continue
            cells = target_cells(row, first, second)
            if cells is not None:
                lines.append(
                    f"| {where} | {row.workload} {row.label} ({row.unit}) | "
                    + " | ".join(cells)
                    + " |"
                )
    commands_md = "\n".join(commands)
    return "\n".join(lines) + f"\n\nThe runs:\n\n```sh\n{commands_md}\n```\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.headline", description=__doc__)
    parser.add_argument("label", nargs="?", default="headline")
    parser.add_argument("--out", type=Path, default=Path("bench/results"))
    args = parser.parse_args(argv)
    text = headline_markdown(args.out, args.label)
    (args.out / f"{args.label}.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
