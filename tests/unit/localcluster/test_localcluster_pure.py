"""Pure parts of the local-cluster launcher: versions, properties, mvn messages, ids."""

from __future__ import annotations

import base64
import itertools
import subprocess
from pathlib import Path
from typing import Any, cast

import pytest

from mm2.errors import BrokerStartError, ConfigError, JarResolutionError
from mm2.localcluster import LocalCluster, LocalClusters, zookeeper
from mm2.localcluster.jars import (
    explain_maven_failure,
    pom_text,
    resolve_classpath,
    scala_version,
)
from mm2.localcluster.java import parse_java_major
from mm2.localcluster.process import WorkDir
from mm2.localcluster.properties import (
    BrokerLayout,
    layout_broker,
    new_cluster_id,
    parse_listeners,
    render_properties,
)


@pytest.mark.parametrize(
    ("output", "major"),
    [
        ('openjdk version "17.0.15" 2025-04-15', 17),
        ('java version "1.8.0_402"', 8),
        ('openjdk version "21" 2023-09-19', 21),
        ("no version here", None),
    ],
)
def test_parse_java_major(output: str, major: int | None) -> None:
    assert parse_java_major(output) == major


def _layout(overrides: dict[str, str]) -> BrokerLayout:
    ports = itertools.count(41000)
    return layout_broker(
        node_id=1, data_dir=Path("/d"), overrides=overrides, pick_port=lambda: next(ports)
    )


def test_default_layout_picks_both_ports_and_derives_the_quorum() -> None:
    layout = _layout({})
    props = layout.properties
    assert props["listeners"] == "PLAINTEXT://127.0.0.1:41000,CONTROLLER://127.0.0.1:41001"
    assert props["advertised.listeners"] == "PLAINTEXT://127.0.0.1:41000"
    assert props["controller.quorum.voters"] == "1@127.0.0.1:41001"
    assert props["process.roles"] == "broker,controller"
    assert props["offsets.topic.replication.factor"] == "1"
    assert props["auto.create.topics.enable"] == "false"
    assert layout.picked_ports == {41000, 41001}
    assert [e.name for e in layout.client_endpoints] == ["PLAINTEXT"]


def test_overrides_win_and_extra_listeners_get_their_own_ports() -> None:
    layout = _layout(
        {
            "listeners": "PLAINTEXT://:0,SASL_SSL://127.0.0.1:0",
            "auto.create.topics.enable": "true",
            "listener.security.protocol.map": (
                "PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL,CONTROLLER:PLAINTEXT"
            ),
        }
    )
    ports = {e.name: e.port for e in layout.endpoints}
    assert len(set(ports.values())) == 3  # PLAINTEXT, SASL_SSL and the added CONTROLLER
    assert layout.properties["auto.create.topics.enable"] == "true"
    assert "SASL_SSL://127.0.0.1:" in layout.properties["advertised.listeners"]
    assert layout.properties["inter.broker.listener.name"] == "PLAINTEXT"


def test_a_named_port_is_kept_and_not_counted_as_picked() -> None:
    layout = _layout({"listeners": "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:0"})
    assert layout.endpoint("PLAINTEXT").port == 9092
    assert 9092 not in layout.picked_ports


@pytest.mark.parametrize("bad", ["PLAINTEXT:9092", "", "CONTROLLER://127.0.0.1:0"])
def test_unusable_listeners_are_config_errors(bad: str) -> None:
    with pytest.raises(ConfigError, match="listeners"):
        if bad == "":
            parse_listeners(bad)
        else:
            _layout({"listeners": bad})


def test_render_properties_is_sorted_and_escaped() -> None:
    text = render_properties({"b": "x\\y", "a": "1\n2"})
    assert text == "a=1\\n2\nb=x\\\\y\n"


def test_maven_messages_name_the_cause() -> None:
    missing = (
        "[ERROR] Failed to execute goal on project p: Could not resolve dependencies: "
        "Could not find artifact org.apache.kafka:kafka_2.13:jar:9.9.9 in central"
    )
    assert "org.apache.kafka:kafka_2.13:jar:9.9.9" in explain_maven_failure(missing, "9.9.9")
    offline = "[ERROR] Plugin could not be resolved: Connect to repo:443 failed: Connection refused"
    assert explain_maven_failure(offline, "4.4.0").startswith("Maven Central unreachable")


def test_cluster_ids_look_like_kafka_uuids() -> None:
    ids = {new_cluster_id() for _ in range(200)}
    assert len(ids) == 200
    for cid in ids:
        assert len(cid) == 22 and not cid.startswith("-")
        assert len(base64.urlsafe_b64decode(cid + "==")) == 16


def test_the_packaged_pom_pins_kafka() -> None:
    assert "<kafka.version>4.4.0</kafka.version>" in pom_text()


def test_kafka_before_2_4_is_resolved_as_its_scala_2_12_build_with_zookeeper_3_5(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Kafka 2.0 and 0.11 were never built for Scala 2.13; their ZooKeeper 3.4 client cannot
    run on Java 17, so the pom's old-zookeeper profile is switched on for them."""
    assert [scala_version(v) for v in ("0.11.0.3", "2.0.1", "2.3.1", "2.4.0", "4.4.0")] == [
        "2.12",
        "2.12",
        "2.12",
        "2.13",
        "2.13",
    ]
    assert scala_version("trunk") == "2.13"
    commands: list[list[str]] = []

    def run(command: list[str], **_: Any) -> subprocess.CompletedProcess[str]:
        commands.append(command)
        return subprocess.CompletedProcess(command, 1, "", "")

    monkeypatch.setattr("mm2.localcluster.jars.subprocess.run", run)
    monkeypatch.setattr("mm2.localcluster.jars.shutil.which", lambda _name: "/usr/bin/mvn")
    for version in ("0.11.0.3", "4.4.0"):
        with pytest.raises(JarResolutionError):
            resolve_classpath(version, cache=tmp_path)
    old, new = commands
    assert "-Dkafka.scala.version=2.12" in old and "-Dold.zookeeper" in old
    assert "-Dkafka.scala.version=2.13" in new and "-Dold.zookeeper" not in new
    assert "<artifactId>kafka_${kafka.scala.version}</artifactId>" in pom_text()
    assert "<name>old.zookeeper</name>" in pom_text()


def test_starting_a_running_cluster_again_is_refused_naming_it(tmp_path: Path) -> None:
    cluster = LocalCluster("twice", workdir=tmp_path)
    stand_in = subprocess.Popen(["sleep", "30"])  # a live process where the broker would be
    try:
        cluster._process = cast(Any, stand_in)
        with pytest.raises(BrokerStartError, match="twice is running already"):
            cluster.start()
        with pytest.raises(BrokerStartError, match="twice is running already"):
            LocalClusters.of([cluster]).start()
    finally:
        stand_in.kill()
        stand_in.wait()
        cluster._process = None


def test_kafka_before_3_runs_with_zookeeper() -> None:
    assert [zookeeper.is_zookeeper_version(v) for v in ("0.11.0.3", "2.8.2", "3.9.1", "4.4.0")] == [
        True,
        True,
        False,
        False,
    ]


def test_a_zookeeper_brokers_settings_drop_the_kraft_ones_and_its_controller_listener(
    tmp_path: Path,
) -> None:
    layout = layout_broker(
        node_id=1, data_dir=tmp_path, overrides={}, pick_port=itertools.count(9000).__next__
    )
    settings = zookeeper.zookeeper_properties(layout.properties, "CONTROLLER", 1, 2181)
    assert settings["listeners"] == "PLAINTEXT://127.0.0.1:9000"
    assert settings["listener.security.protocol.map"] == "PLAINTEXT:PLAINTEXT"
    assert settings["zookeeper.connect"] == "127.0.0.1:2181" and settings["broker.id"] == "1"
    assert not {"process.roles", "node.id", "controller.quorum.voters"} & settings.keys()
    assert settings["log.dirs"] == str(tmp_path)


def test_a_workdir_made_here_is_removed_and_a_given_one_kept(tmp_path: Path) -> None:
    made = WorkDir(None, prefix="mm2-test-")
    with pytest.raises(BrokerStartError, match="not started"):
        made.path(BrokerStartError("not started"))
    path = made.make()
    assert path.is_dir() and made.make() == path == made.path(BrokerStartError("unused"))
    made.remove()
    assert not path.exists()
    given = WorkDir(tmp_path / "kept", prefix="mm2-test-")
    assert given.path(BrokerStartError("unused")) == tmp_path / "kept"
    given.make().mkdir()
    given.remove()
    assert (tmp_path / "kept").is_dir()
