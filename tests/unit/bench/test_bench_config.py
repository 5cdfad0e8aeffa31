"""bench flags, the mm2.properties both systems run with, and the Apache MM2 pom."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from bench.apache import POM, candidate_versions
from bench.mesh import CLUSTERS, flows, mesh_properties
from bench.settings import QUICK, Settings, parse_args
from bench.systems import SystemName, is_ours, mirror_properties
from mm2.localcluster import KAFKA_VERSION


def _props(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, _, value = line.partition("=")
            out[key.strip()] = value.strip()
    return out


def _file(system: SystemName, tasks_max: int) -> dict[str, str]:
    """The mm2.properties `system` runs the bench's `w1-.*` topics with, as a dict."""
    return _props(
        mirror_properties(
            system,
            primary="p:1",
            backup="b:2",
            topics="w1-.*",
            tasks_max=tasks_max,
            state_dir=Path("/tmp/state"),
        )
    )


def test_full_run_is_the_issue_sizes() -> None:
    s = parse_args([])
    assert (s.w1_records, s.w1_record_bytes, s.w1_partitions) == (2_000_000, 1024, 8)
    assert (s.w2_rate, s.w2_seconds) == (20_000, 60.0)
    assert (s.w3_topics, s.w3_partitions) == (200, 10)
    assert s.systems == ("mm2", "apache")
    assert s.label == "full"


def test_quick_preset_and_flags_on_top_of_it() -> None:
    s = parse_args(["--quick", "--w1-records", "1234", "--systems", "apache", "--w2-seconds", "2"])
    assert s.label == "quick"
    assert s.w1_records == 1234
    assert s.w2_rate == QUICK["w2_rate"]
    assert s.w2_seconds == 2.0
    assert s.systems == ("apache",)


def test_unknown_system_is_refused() -> None:
    with pytest.raises(SystemExit):
        parse_args(["--systems", "mm2,kafka"])


def test_both_systems_get_the_same_settings_but_our_state_dir() -> None:
    ours = _file("mm2", 3)
    theirs = _file("apache", 3)
    assert ours.pop("mm2.state.dir") == "/tmp/state"
    assert ours == theirs
    assert theirs["tasks.max"] == "3"
    assert theirs["primary->backup.topics"] == "w1-.*"
    assert theirs["backup.producer.acks"] == "all"
    assert theirs["backup.producer.compression.type"] == "none"
    assert theirs["primary.consumer.max.partition.fetch.bytes"] == "1048576"
    # Single-broker clusters: every internal topic with one replica.
    factors = [k for k in theirs if k.endswith("replication.factor")]
    assert len(factors) == 7
    assert {theirs[k] for k in factors} == {"1"}


def test_apache_versions_start_with_the_brokers() -> None:
    versions = candidate_versions()
    assert versions[0] == KAFKA_VERSION
    assert len(versions) == len(set(versions))
    assert candidate_versions("4.3.1") == ["4.3.1"]


def test_pom_asks_for_connect_mirror_at_the_version_property() -> None:
    ns = {"m": "http://maven.apache.org/POM/4.0.0"}
    root = ET.parse(POM).getroot()
    deps = {
        d.findtext("m:artifactId", namespaces=ns): d.findtext("m:version", namespaces=ns)
        for d in root.iterfind("m:dependencies/m:dependency", ns)
    }
    assert deps["connect-mirror"] == "${kafka.version}"


def test_settings_defaults_are_frozen() -> None:
    with pytest.raises(AttributeError):
        Settings().w1_records = 1  # type: ignore[misc]


def test_at_least_once_run_differs_from_ours_only_by_exactly_once() -> None:
    ours = _file("mm2", 4)
    off = _file("mm2-at-least-once", 4)
    assert off.pop("exactly.once.source.support") == "disabled"
    assert off == ours
    assert "exactly.once.source.support" not in ours  # mm2's default: enabled


def test_at_least_once_system_is_chosen_by_flag_only() -> None:
    assert "mm2-at-least-once" not in parse_args([]).systems
    s = parse_args(["--systems", "mm2,mm2-at-least-once,apache"])
    assert s.systems == ("mm2", "mm2-at-least-once", "apache")


def test_apache_exactly_once_is_apache_with_its_documented_exactly_once_settings() -> None:
    plain = _file("apache", 4)
    eos = _file("apache-exactly-once", 4)
    assert eos.pop("backup.exactly.once.source.support") == "enabled"
    assert eos.pop("dedicated.mode.enable.internal.rest") == "true"
    assert eos.pop("listeners").startswith("http://127.0.0.1:")
    assert eos.pop("primary.consumer.isolation.level") == "read_committed"
    assert eos == plain
    assert "mm2.state.dir" not in plain  # Apache's, not ours
    assert not is_ours("apache-exactly-once")
    assert "apache-exactly-once" not in parse_args([]).systems
    chosen = parse_args(["--systems", "mm2,apache,apache-exactly-once"]).systems
    assert chosen == ("mm2", "apache", "apache-exactly-once")


def test_a_property_for_ours_is_parsed_and_a_malformed_one_refused() -> None:
    s = parse_args(
        ["--mm2-property", "transaction.boundary.interval.ms = 25", "--mm2-property", "a=b=c"]
    )
    assert s.mm2_properties == (("transaction.boundary.interval.ms", "25"), ("a", "b=c"))
    assert parse_args([]).mm2_properties == ()
    with pytest.raises(SystemExit):
        parse_args(["--mm2-property", "no-equals-sign"])


def test_the_twelve_flow_file_is_the_same_for_both_systems_but_our_state() -> None:
    clusters = {name: f"{name}:9092" for name in CLUSTERS}
    ours = _props(mesh_properties("mm2", clusters, Path("/tmp/s"), {"k": "v"}))
    theirs = _props(mesh_properties("apache", clusters, Path("/tmp/s")))
    assert len(flows()) == 12 and len(set(flows())) == 12
    assert all(ours[f"{a}->{b}.enabled"] == "true" for a, b in flows())
    assert {k: v for k, v in ours.items() if k not in ("mm2.state.dir", "k")} == theirs
    assert ours["mm2.state.dir"] == "/tmp/s" and ours["k"] == "v"
    assert (theirs["topics"], theirs["tasks.max"]) == ("w7-.*", "1")
    assert theirs["clusters"] == "dc1, dc2, dc3, dc4"


def test_w7_runs_only_when_named() -> None:
    assert "w7" not in parse_args([]).workloads
    s = parse_args(["--quick", "--workloads", "w7", "--w7-rate", "50"])
    assert s.workloads == ("w7",) and s.w7_rate == 50 and s.w7_seconds == QUICK["w7_seconds"]
