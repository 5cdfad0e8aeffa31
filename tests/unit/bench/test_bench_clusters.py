"""bench.clusters: which runs get fresh cluster pairs, the brokers' heap, one pair at a time."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest

from bench import clusters as clusters_module
from bench import warmup
from bench.cli import _attempt
from bench.clusters import (
    BIG_BROKER_JVM,
    FRESH_W3_PARTITIONS,
    ClusterPairs,
    broker_jvm,
    partitions_per_broker,
    raise_open_files_limit,
    wants_fresh_pairs,
)
from bench.report import markdown
from bench.settings import parse_args
from mm2.localcluster import C1_ONLY, DEFAULT_JVM_OPTIONS, SERVER_JVM_OPTIONS


def test_small_runs_share_one_pair_but_w1_and_ten_thousand_partitions_do_not() -> None:
    default = parse_args([])
    assert not any(wants_fresh_pairs(default, w) for w in ("w2", "w3", "w5"))
    assert wants_fresh_pairs(default, "w1")  # the order of the systems moved W1 on a shared pair
    quick = parse_args(["--quick"])
    assert not wants_fresh_pairs(quick, "w3")
    big = parse_args(["--w3-topics", "1000", "--w3-partitions", "10"])
    assert FRESH_W3_PARTITIONS <= 1000 * 10
    assert wants_fresh_pairs(big, "w3")
    assert not wants_fresh_pairs(big, "w2")  # only W3 is large
    forced = parse_args(["--fresh-clusters"])
    assert forced.fresh_clusters
    assert all(wants_fresh_pairs(forced, w) for w in ("w1", "w2", "w3"))


def test_fresh_pairs_get_a_bigger_broker_heap_and_every_pair_the_full_jit() -> None:
    assert broker_jvm(False) == SERVER_JVM_OPTIONS
    # Local clusters for tests compile with C1 only; the bench measures brokers as they run.
    assert C1_ONLY == "-XX:TieredStopAtLevel=1" and C1_ONLY in DEFAULT_JVM_OPTIONS
    assert not [o for o in (*broker_jvm(False), *broker_jvm(True)) if "TieredStopAtLevel" in o]
    assert "-Xmx2g" in broker_jvm(True)
    assert not [o for o in BIG_BROKER_JVM if o.startswith("-Xmx") and o != "-Xmx2g"]
    assert len(BIG_BROKER_JVM) == len(SERVER_JVM_OPTIONS)  # the other flags are kept


def test_partitions_per_broker_counts_every_system_sharing_the_pair() -> None:
    shared = parse_args(["--w3-topics", "200", "--w3-partitions", "10"])
    fresh = parse_args(["--w3-topics", "1000", "--w3-partitions", "10"])
    # 200 topics and the new one, for each of the two systems, plus the internal topics.
    assert partitions_per_broker(shared, "w3") == 2 * 201 * 10 + 120
    assert partitions_per_broker(fresh, "w3") == 1001 * 10 + 120


def test_open_files_limit_is_not_lowered() -> None:
    import resource

    before, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    soft, _ = raise_open_files_limit()
    assert soft >= before
    assert hard == resource.RLIM_INFINITY or soft <= hard


class _FakeClusters:
    """Stands in for LocalClusters: records when each pair starts and stops."""

    events: ClassVar[list[str]] = []

    def __init__(self, names: list[str], *, workdir: Path, **options: Any) -> None:
        self.workdir = workdir
        self.options = options

    def __enter__(self) -> _FakeClusters:
        self.workdir.mkdir(parents=True)
        (self.workdir / "data").write_text("partitions")
        self.events.append(f"start {self.workdir.name} {self.options['jvm_options'][1]}")
        return self

    def __exit__(self, *exc: object) -> None:
        self.events.append(f"stop {self.workdir.name}")

    def __getitem__(self, name: str) -> Any:
        return type("Cluster", (), {"bootstrap_servers": f"{name}:9092"})()


class _FakeContext:
    def __init__(
        self, settings: Any, primary: str, backup: str, *rest: Any, source_for_mirrors: str
    ) -> None:
        self.primary = primary
        self.source_for_mirrors = source_for_mirrors

    def close(self) -> None:
        _FakeClusters.events.append("close clients")


def test_one_pair_runs_at_a_time_and_fresh_pairs_are_deleted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(clusters_module, "LocalClusters", _FakeClusters)
    monkeypatch.setattr(clusters_module, "Context", _FakeContext)
    _FakeClusters.events = []
    pairs = ClusterPairs(parse_args([]), tmp_path, "abc", None)
    with pairs.pair("w1-mm2", fresh=False) as first:
        pass
    with pairs.pair("w1-apache", fresh=False) as second:
        assert second is first  # the shared pair is reused
    with pairs.pair("w3-mm2", fresh=True) as ctx:
        assert ctx.primary == "primary:9092"
        assert ctx.source_for_mirrors == "primary:9092"  # no --link: the mirrors' source too
        assert (tmp_path / "clusters-w3-mm2" / "data").exists()
    assert not (tmp_path / "clusters-w3-mm2").exists()  # deleted with its partitions
    with pairs.pair("w3-apache", fresh=True):
        pass
    pairs.close()
    assert _FakeClusters.events == [
        "start clusters -Xmx512m",
        "close clients",  # the shared pair stops before the first fresh pair starts
        "stop clusters",
        "start clusters-w3-mm2 -Xmx2g",
        "close clients",
        "stop clusters-w3-mm2",
        "start clusters-w3-apache -Xmx2g",
        "close clients",
        "stop clusters-w3-apache",
    ]
    assert pairs.started == ["shared", "w3-mm2", "w3-apache"]


def test_a_system_that_fails_is_reported_and_the_others_still_run() -> None:
    def broken() -> dict[str, Any]:
        raise RuntimeError("producing to w3-apache-0000...: 1170 unsent")

    result = _attempt(broken, "apache")
    assert result["verify"]["ok"] is False
    assert "1170 unsent" in result["error"]
    table = markdown({"w3": {"apache": result}})
    assert "- W3 apache: **FAILED**" in table
    assert "1170 unsent" in table


def test_w3_reports_memory_per_partition_and_cpu() -> None:
    ok = {"ok": True, "records_source": 10, "records_target": 10, "problems": []}
    results = {
        "w3": {
            "mm2": {
                "peak_rss_bytes": 2**30,
                "rss_per_partition_bytes": 2**30 / 10_000,
                "cpu_s": 300.0,
                "verify": ok,
            },
            "apache": {
                "peak_rss_bytes": 2**29,
                "rss_per_partition_bytes": 2**29 / 10_000,
                "cpu_s": 150.0,
                "verify": ok,
            },
        }
    }
    table = markdown(results)
    rss = next(ln for ln in table.splitlines() if "peak RSS during W3" in ln)
    assert "| 1,024 | 512 | 2.00 |" in rss
    per = next(ln for ln in table.splitlines() if "per partition during W3" in ln)
    assert "(KiB) | 105 | 52.43 | 2.00 |" in per
    cpu = next(ln for ln in table.splitlines() if "CPU during W3" in ln)
    assert "| 300 | 150 | 2.00 |" in cpu


def test_large_w3_runs_poll_the_target_less_often() -> None:
    from bench.breadth import arrival_poll_s
    from bench.context import POLL_S

    assert arrival_poll_s(1000 * 10) > POLL_S
    assert arrival_poll_s(500 * 10) == arrival_poll_s(1000 * 10)
    assert arrival_poll_s(200 * 10) == POLL_S  # the default, quick and small runs as before
    assert arrival_poll_s(20 * 10) == POLL_S


def test_with_a_warm_up_each_fresh_pair_is_warmed_before_its_mirror_and_the_shared_one_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(clusters_module, "LocalClusters", _FakeClusters)
    monkeypatch.setattr(clusters_module, "Context", _FakeContext)

    def warm_up(bootstraps: list[str], seconds: float) -> None:
        _FakeClusters.events.append(f"warm {','.join(bootstraps)} {seconds:.0f} s")

    monkeypatch.setattr(clusters_module, "warm_up", warm_up)
    _FakeClusters.events = []
    settings = parse_args(["--warm-up-s", "20"])
    assert settings.warm_up_s == 20.0 and parse_args([]).warm_up_s == 0.0
    pairs = ClusterPairs(settings, tmp_path, "abc", None)
    with pairs.pair("w2-mm2", fresh=True):
        _FakeClusters.events.append("mirror")
    with pairs.pair("w2-apache", fresh=False):
        pass
    pairs.close()
    assert _FakeClusters.events[:5] == [
        "start clusters-w2-mm2 -Xmx2g",
        "warm primary:9092,backup:9092 20 s",
        "mirror",
        "close clients",
        "stop clusters-w2-mm2",
    ]
    assert not any(e.startswith("warm") for e in _FakeClusters.events[5:])


def test_no_warm_up_touches_no_cluster() -> None:
    warmup.warm_up(["nowhere:1"], 0)  # returns at once: nothing to connect to
