"""bench.report: the side-by-side table, ratios, targets met or missed, timed-out waits."""

from __future__ import annotations

from typing import Any

from bench.report import LATENCY_NOTE, markdown


def _ok() -> dict[str, Any]:
    return {"ok": True, "records_source": 10, "records_target": 10, "problems": []}


def _results(ours_rate: float, theirs_rate: float) -> dict[str, Any]:
    return {
        "ceiling": {
            "read_records_per_s": 400.0,
            "write_records_per_s": 200.0,
            "ceiling_records_per_s": 200.0,
        },
        "w1": {
            "mm2": {"records_per_s": ours_rate, "peak_rss_bytes": 2**30, "verify": _ok()},
            "apache": {"records_per_s": theirs_rate, "peak_rss_bytes": 2**31, "verify": _ok()},
        },
        "w2": {
            "mm2": {
                "latency_ms": {"p50": 40.0, "p95": 300.0, "p99": 500.0, "max": 900.0},
                "committed_latency_ms": {"p50": 150.0, "p95": 420.0, "p99": 1500.0},
                "verify": _ok(),
            },
            "apache": {"latency_ms": {"p99": 50.0}, "verify": _ok()},
        },
        "w3": {
            "mm2": {"new_topic_s": 1.5, "config_change_s": 3.0, "verify": _ok()},
            "apache": {
                "new_topic_s": None,
                "new_topic_timed_out": True,
                "config_change_s": None,
                "config_change_timed_out": True,
                "wait_bound_s": 120,
                "verify": {**_ok(), "ok": False, "problems": ["t-0: lost 1 of 10"]},
            },
        },
    }


def _row(table: str, metric: str) -> list[str]:
    line = next(ln for ln in table.splitlines() if f"| {metric}" in ln)
    return [c.strip() for c in line.strip("|").split("|")]


THROUGHPUT_TARGET = ">= 3x Apache (2x across a link), >= 80% of ceiling"


def test_throughput_target_met_and_ratio() -> None:
    table = markdown(_results(ours_rate=180.0, theirs_rate=60.0))
    row = _row(table, "throughput (records/s)")
    assert row[2:5] == ["180", "60.00", "3.00"]
    assert row[-2:] == [THROUGHPUT_TARGET, "yes"]
    assert "mm2 reached 90% of the lower" in table


def test_throughput_target_missed_below_3x_or_the_ceiling_fraction() -> None:
    # 3.6x Apache but only 60% of the ceiling: missed.
    row = _row(markdown(_results(ours_rate=120.0, theirs_rate=33.0)), "throughput (records/s)")
    assert row[-1] == "**no**"
    # 90% of the ceiling but 2.5x Apache: missed.
    row = _row(markdown(_results(ours_rate=180.0, theirs_rate=72.0)), "throughput (records/s)")
    assert row[-1] == "**no**"


def test_across_a_link_the_throughput_target_is_2x() -> None:
    results = _results(ours_rate=180.0, theirs_rate=72.0)
    results["meta"] = {"settings": {"link": "50 ms round trip"}}
    assert _row(markdown(results), "throughput (records/s)")[-1] == "yes"
    results["meta"] = {"settings": {"link": "None"}}  # how a run without --link records it
    assert _row(markdown(results), "throughput (records/s)")[-1] == "**no**"


def test_w2_targets_are_held_against_apache_mm2_default() -> None:
    def verdicts(append: dict[str, float], committed: dict[str, float]) -> list[str]:
        table = markdown(
            _w2(
                {"latency_ms": append, "committed_latency_ms": committed},
                {
                    "latency_ms": {"p50": 8.0, "p99": 400.0},
                    "committed_latency_ms": {"p50": 40.0, "p99": 500.0},
                },
            )
        )
        return [
            _row(table, metric)[-1]
            for metric in (
                "append latency (read_uncommitted) p50 (ms)",
                "append latency (read_uncommitted) p99 (ms)",
                "committed latency (read_committed) p50 (ms)",
                "committed latency (read_committed) p99 (ms)",
            )
        ]

    # At the bounds: Apache's append p50 and p99, its append p50 + 20, its committed p99 + 100.
    assert verdicts({"p50": 8.0, "p99": 400.0}, {"p50": 28.0, "p99": 600.0}) == ["yes"] * 4
    assert verdicts({"p50": 9.0, "p99": 401.0}, {"p50": 29.0, "p99": 601.0}) == ["**no**"] * 4
    # Committed p50 is held against Apache's append p50, not its committed one (40 ms).
    assert verdicts({"p50": 5.0, "p99": 100.0}, {"p50": 39.0, "p99": 200.0})[2] == "**no**"


def test_w2_cpu_target_is_six_tenths_of_apache() -> None:
    def verdict(ours: float) -> str:
        table = markdown(_w2({"cpu_s_per_m": ours}, {"cpu_s_per_m": 100.0}))
        return _row(table, "CPU during W2")[-1]

    assert (verdict(60.0), verdict(61.0)) == ("yes", "**no**")


def test_latency_rss_and_timed_out_waits() -> None:
    table = markdown(_results(180.0, 100.0))
    assert _row(table, "append latency (read_uncommitted) p99 (ms)")[-1] == "**no**"
    assert _row(table, "peak RSS during W1 (MiB)")[2:4] == ["1,024", "2,048"]
    new_topic = _row(table, "new topic to first record (s)")
    assert new_topic[2] == "1.50"
    assert new_topic[3] == "> 120 (timed out)"
    assert new_topic[-1] == "yes"


def test_correctness_failure_is_named() -> None:
    table = markdown(_results(180.0, 100.0))
    assert "- W3 apache: **FAILED** (10 source, 10 target records): t-0: lost 1 of 10" in table
    assert "- W1 mm2: passed" in table


def _w2(mm2: dict[str, Any], apache: dict[str, Any]) -> dict[str, Any]:
    return {"w2": {"mm2": {**mm2, "verify": _ok()}, "apache": {**apache, "verify": _ok()}}}


def _latencies(p50: float, samples: int) -> dict[str, float | int]:
    return {"p50": p50, "p95": 2 * p50, "p99": 3 * p50, "max": 4 * p50, "samples": samples}


def test_both_w2_latencies_side_by_side_for_both_systems() -> None:
    table = markdown(
        _w2(
            {
                "latency_ms": _latencies(100.0, 1_200_000),
                "committed_latency_ms": _latencies(200.0, 1_199_000),
            },
            {
                "latency_ms": _latencies(10.0, 1_200_000),
                "committed_latency_ms": _latencies(12.0, 50),
            },
        )
    )
    metrics = [_row(table, m)[1] for m in ("append latency", "committed latency")]
    assert metrics == [
        "append latency (read_uncommitted) p50 (ms)",
        "committed latency (read_committed) p50 (ms)",
    ]
    w2 = [_cells(ln) for ln in table.splitlines() if ln.startswith("| W2 |") and "latency" in ln]
    # Each statistic of the append latency is followed by the same one of the committed latency.
    assert [r[1] for r in w2] == [
        f"{kind} {stat} ({'records' if stat == 'samples' else 'ms'})"
        for stat in ("p50", "p95", "p99", "max")
        for kind in ("append latency (read_uncommitted)", "committed latency (read_committed)")
    ] + [
        "append latency (read_uncommitted) samples (records)",
        "committed latency (read_committed) samples (records)",
    ]
    committed_p99 = _row(table, "committed latency (read_committed) p99 (ms)")
    assert committed_p99[2:5] == ["600", "36.00", "16.67"]
    assert committed_p99[5:] == ["<= Apache's committed p99 + 100 ms", "**no**"]
    append_p99 = _row(table, "append latency (read_uncommitted) p99 (ms)")
    assert append_p99[2:4] == ["300", "30.00"]
    assert append_p99[5:] == ["<= Apache", "**no**"]
    assert _row(table, "append latency (read_uncommitted) p95 (ms)")[5:] == ["", ""]
    samples = _row(table, "committed latency (read_committed) samples (records)")
    assert samples[2:4] == ["1,199,000", "50"]
    assert LATENCY_NOTE in table


def test_committed_latency_missing_reads_na_and_a_reader_failure_is_named() -> None:
    table = markdown(
        _w2(
            {"latency_ms": _latencies(100.0, 10), "committed_latency_error": "RuntimeError: x"},
            {"latency_ms": _latencies(10.0, 10)},
        )
    )
    assert _row(table, "committed latency (read_committed) p50 (ms)")[2:5] == ["n/a"] * 3
    assert _row(table, "append latency (read_uncommitted) samples (records)")[2:4] == ["10", "10"]
    assert "W2 mm2: the read_committed reader failed: RuntimeError: x" in table


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip("|").split("|")]


def test_at_least_once_column_and_the_cost_of_exactly_once() -> None:
    results = _results(ours_rate=180.0, theirs_rate=100.0)
    results["w1"]["mm2-at-least-once"] = {
        "records_per_s": 200.0,
        "peak_rss_bytes": 2**29,
        "verify": _ok(),
    }
    results["w2"]["mm2-at-least-once"] = {
        "latency_ms": {"p50": 20.0, "p95": 100.0, "p99": 250.0, "max": 400.0},
        "committed_latency_ms": {"p50": 25.0, "p95": 120.0, "p99": 300.0},
        "verify": _ok(),
    }
    table = markdown(results)
    header = next(ln for ln in table.splitlines() if ln.startswith("| workload"))
    assert _cells(header) == [
        "workload",
        "metric",
        "mm2",
        "mm2 EOS off",
        "Apache MM2",
        "mm2 / Apache",
        "EOS off / Apache",
        "EOS on / off",
        "target",
        "met",
    ]
    # mm2 180, EOS off 200, Apache 100: ratios 1.80, 2.00 and 0.90; the target stays mm2's.
    assert _row(table, "throughput (records/s)")[2:] == [
        "180",
        "200",
        "100",
        "1.80",
        "2.00",
        "0.90",
        THROUGHPUT_TARGET,
        "**no**",
    ]
    assert _row(table, "committed latency (read_committed) p99 (ms)")[2:8] == [
        "1,500",
        "300",
        "n/a",
        "n/a",
        "n/a",
        "5.00",
    ]
    # W3 ran without it: an empty cell, not a failure.
    assert _row(table, "new topic to first record (s)")[3] == "n/a"
    assert "mm2 with exactly-once disabled 100%" in table
    assert "- W2 mm2-at-least-once: passed" in table


def test_two_system_table_has_no_at_least_once_column() -> None:
    table = markdown(_results(ours_rate=180.0, theirs_rate=100.0))
    assert "EOS on / off" not in table
    assert "exactly-once disabled" not in table


def test_start_up_and_breadth_are_held_against_apache() -> None:
    def verdicts(first: float, mirrored: float) -> list[list[str]]:
        table = markdown(
            {
                "w1": {
                    "mm2": {"first_record_s": first, "verify": _ok()},
                    "apache": {"first_record_s": 8.1, "verify": _ok()},
                },
                "w3": {
                    "mm2": {"mirrored_s": mirrored, "verify": _ok()},
                    "apache": {"mirrored_s": 24.7, "verify": _ok()},
                },
            }
        )
        return [_row(table, m)[-2:] for m in ("start to first record", "all topics mirrored")]

    assert verdicts(7.1, 20.0) == [["<= Apache", "yes"], ["< Apache", "yes"]]
    assert verdicts(9.5, 37.6) == [["<= Apache", "**no**"], ["< Apache", "**no**"]]


def test_the_ceiling_is_the_plain_copiers_rate_when_they_were_measured() -> None:
    results = _results(ours_rate=180.0, theirs_rate=90.0)
    results["ceiling"].update(copiers=4, copy_records_per_s=300.0, ceiling_records_per_s=300.0)
    table = markdown(results)
    assert "4 plain copiers" in table and "300 records/s" in table
    assert "mm2 reached 60% of the copiers' rate" in table
    # 2x Apache, but 60% of the fair ceiling: the throughput target is missed
    assert _row(table, "throughput (records/s)")[-1] == "**no**"


def test_twelve_flows_are_held_against_apache_and_their_verify_is_named() -> None:
    def w7(idle_pct: float, rss_mib: int, ok: bool) -> dict[str, Any]:
        verify = _ok() if ok else {**_ok(), "ok": False, "problems": ["dc1->dc2-0: lost 3 of 9"]}
        return {
            "start_s": 20.0,
            "idle": {"cpu_core_pct": idle_pct, "rss_bytes": rss_mib * 2**20},
            "load": {"cpu_s_per_m": 50.0},
            "peak_rss_bytes": 2 * rss_mib * 2**20,
            "verify": verify,
        }

    table = markdown({"w7": {"mm2": w7(4.0, 700, ok=False), "apache": w7(9.0, 600, ok=True)}})
    assert _row(table, "idle CPU (% of a core)")[2:] == ["4.00", "9.00", "0.44", "< Apache", "yes"]
    assert _row(table, "idle RSS (MiB)")[-3:] == ["1.17", "< Apache", "**no**"]
    assert _row(table, "CPU under load")[-1] == "**no**"  # equal is not below
    assert _row(table, "start to every flow copying")[-1] == "yes"
    assert "W7 mm2: **FAILED**" in table and "dc1->dc2-0: lost 3 of 9" in table
    assert "W7 apache: passed" in table
