"""bench.headline: the target rows of the headline's runs, both orders, in one table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.headline import headline_markdown


def _run(folder: Path, systems: str, mm2_rate: float, apache_rate: float) -> None:
    folder.mkdir(parents=True)
    ok = {"ok": True, "records_source": 1, "records_target": 1, "problems": []}
    results: dict[str, Any] = {
        "meta": {
            "command": f"python -m bench --label {folder.name}",
            "settings": {"systems": systems, "link": "None"},
        },
        "ceiling": {"ceiling_records_per_s": 100.0},
        "w1": {
            "mm2": {"records_per_s": mm2_rate, "verify": ok},
            "apache": {"records_per_s": apache_rate, "verify": ok},
        },
    }
    (folder / "results.json").write_text(json.dumps(results))


def test_each_target_row_reads_mm2_first_then_apache_first(tmp_path: Path) -> None:
    # The folder without -reversed ran Apache MM2 first here: the table still reads mm2 first.
    _run(tmp_path / "h-local", "('apache', 'mm2')", 90.0, 30.0)
    _run(tmp_path / "h-local-reversed", "('mm2', 'apache')", 95.0, 20.0)
    table = headline_markdown(tmp_path, "h")
    row = next(ln for ln in table.splitlines() if "W1 throughput" in ln)
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[0] == "one machine"
    assert cells[2:5] == ["95.00 / 90.00", "20.00 / 30.00", "3.77"]
    assert cells[-1] == "both orders"  # 4.75x and 3x Apache, 95 % and 90 % of the ceiling
    assert "python -m bench --label h-local" in table


def test_a_run_missing_its_twin_is_left_out(tmp_path: Path) -> None:
    _run(tmp_path / "h-w7", "('mm2', 'apache')", 90.0, 30.0)
    assert "twelve flows" not in headline_markdown(tmp_path, "h")
