"""The benchmark harness end to end at toy sizes, on the session's two clusters.

Speed is not asserted (bench/ measures it); the harness must run each system, see every record
arrive, verify them and write its table, JSON and plots. Apache MM2's jars are resolved from
Maven Central here (cached in ~/.m2 after the first run).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import replace
from pathlib import Path

import pytest

pytest.importorskip("psutil", reason="the bench extra is not installed: pip install -e '.[bench]'")
pytest.importorskip("matplotlib", reason="the bench extra is not installed")

from bench.apache import resolve_apache_mm2
from bench.backlog import run_backlog, run_ceiling
from bench.breadth import run_breadth
from bench.context import Context
from bench.groups import run_groups
from bench.report import markdown, write_results
from bench.settings import Settings
from bench.steady import run_steady
from tests.support.kafka import Cluster

# Alone on the 2-core machine the run takes about 90 s; beside the other lane's broker tests it
# took 306 s and hit the default 300 s timeout, so it gets ten times its lone run.
pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(900)]


TINY = Settings(
    label="smoke",
    tasks_max=2,
    w1_records=3_000,
    w1_record_bytes=200,
    w1_partitions=3,
    w1_timeout_s=180.0,
    w2_rate=200,
    w2_seconds=2.0,
    w2_partitions=2,
    w3_topics=2,
    w3_partitions=2,
    w3_records_per_topic=20,
    w3_timeout_s=180.0,
    w3_wait_s=20.0,
    w5_rate=200,
    w5_seconds=3.0,
    w5_partitions=2,
    w5_settle_s=5.0,
)


def test_bench_runs_both_systems_and_verifies(
    primary: Cluster, backup: Cluster, tmp_path: Path
) -> None:
    ctx = Context(
        replace(TINY, out=tmp_path),
        primary.bootstrap_servers,
        backup.bootstrap_servers,
        tmp_path / "work",
        uuid.uuid4().hex[:6],
        resolve_apache_mm2(),
    )
    results = {
        "ceiling": run_ceiling(ctx),
        "w1": {"mm2": run_backlog(ctx, "mm2"), "apache": run_backlog(ctx, "apache")},
        "w2": {"apache": run_steady(ctx, "apache")},
        "w3": {"mm2": run_breadth(ctx, "mm2")},
        "w5": {"mm2": run_groups(ctx, "mm2")},
    }
    for system, res in results["w1"].items():
        assert res["reached"], system
        assert res["verify"]["ok"], (system, res["verify"]["problems"])
        assert res["verify"]["records_target"] == TINY.w1_records
        assert res["records_per_s"] > 0
        assert res["peak_rss_bytes"] > 0
        assert res["exit_code"] is not None
    steady = results["w2"]["apache"]
    assert steady["verify"]["ok"], steady["verify"]["problems"]
    assert steady["latency_ms"]["samples"] == steady["records"] == 400
    assert steady["latency_ms"]["p50"] >= 0
    # The read_committed reader got every paced record too (Apache MM2 runs without
    # transactions here, so its committed latency is close to its append latency).
    assert steady["committed_latency_error"] is None
    assert steady["committed_latency_ms"]["samples"] == steady["records"]
    assert steady["committed_latency_ms"]["p50"] >= 0
    breadth = results["w3"]["mm2"]
    assert breadth["verify"]["ok"], breadth["verify"]["problems"]
    assert breadth["new_topic_s"] is not None
    assert breadth["config_change_s"] is not None
    assert results["ceiling"]["ceiling_records_per_s"] > 0
    groups = results["w5"]["mm2"]["variants"]["defaults"]
    assert groups["error"] is None
    assert groups["commits"] > 0 and groups["missed"] == 0, groups
    assert groups["reached"] > 0 and groups["new_group_s"] is not None, groups

    written = write_results(results, tmp_path / "out")
    names = {p.name for p in written}
    assert {"results.json", "results.md", "w1_throughput.png", "w2_latency.png"} <= names
    assert json.loads((tmp_path / "out" / "results.json").read_text())["w1"]["mm2"]["reached"]
    table = markdown(results)
    assert "| W1 | throughput (records/s) |" in table
    assert "| W2 | append latency (read_uncommitted) p99 (ms) |" in table
    assert "| W2 | committed latency (read_committed) p99 (ms) |" in table
    assert "| mm2 (this project) | defaults |" in table
    # Every topic the bench made is gone again.
    leftovers = [t for t in ctx.src.topics() if ctx.run_id in t]
    assert leftovers == []
