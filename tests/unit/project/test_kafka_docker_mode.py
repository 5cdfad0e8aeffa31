"""MM2_TEST_KAFKA=docker (tests/support/kafka_docker.py): without a Docker engine that
answers, one line says so and the local launcher starts the clusters; with one, testcontainers
does."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

from mm2.localcluster import KAFKA_VERSION
from mm2.localcluster.properties import BROKER_DEFAULTS
from tests.support import kafka_docker
from tests.support.kafka_docker import (
    IMAGE,
    DockerCluster,
    broker_environment,
    cluster_id,
    environment_name,
    launch_clusters,
    start_script,
)


class FakeLocal:
    """Stands in for LocalClusters: records that it was used, starts nothing."""

    started: list[list[str]]

    def __init__(self, names: Sequence[str]) -> None:
        self.names = list(names)

    def __enter__(self) -> list[DockerCluster]:
        type(self).started.append(self.names)
        return [DockerCluster(n, f"127.0.0.1:{9000 + i}") for i, n in enumerate(self.names)]

    def __exit__(self, *exc: object) -> None:
        pass


@pytest.fixture
def fake_local() -> type[FakeLocal]:
    return type("Local", (FakeLocal,), {"started": []})


@pytest.fixture
def no_engine(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A DOCKER_HOST socket nobody listens on, and no ~/.testcontainers.properties host."""
    from testcontainers.core.config import testcontainers_config

    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    monkeypatch.setattr(testcontainers_config, "tc_properties", {})


def test_without_an_engine_docker_mode_says_so_in_one_line_and_launches_locally(
    no_engine: None, fake_local: type[FakeLocal], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MM2_TEST_KAFKA", "docker")
    said: list[str] = []

    def no_docker(names: Sequence[str]) -> None:
        raise AssertionError("docker mode must not start containers without an engine")

    monkeypatch.setattr(kafka_docker, "docker_clusters", no_docker)
    with launch_clusters(["primary", "backup"], said.append, local=fake_local) as clusters:
        assert [(c.name, c.bootstrap_servers) for c in clusters] == [
            ("primary", "127.0.0.1:9000"),
            ("backup", "127.0.0.1:9001"),
        ]
    assert fake_local.started == [["primary", "backup"]]
    assert len(said) == 1 and "\n" not in said[0]
    assert said[0].startswith("MM2_TEST_KAFKA=docker: no Docker engine answers (")
    assert said[0].endswith("; the local launcher starts the clusters instead")


def test_the_engine_probe_names_a_missing_testcontainers(
    monkeypatch: pytest.MonkeyPatch, fake_local: type[FakeLocal]
) -> None:
    monkeypatch.setitem(sys.modules, "testcontainers.core.docker_client", None)
    said: list[str] = []
    with launch_clusters(["primary"], said.append, mode="docker", local=fake_local):
        pass
    assert said == [
        "MM2_TEST_KAFKA=docker: testcontainers is not installed "
        "(testcontainers.core.docker_client); the local launcher starts the clusters instead"
    ]
    assert fake_local.started == [["primary"]]


def test_local_mode_is_the_default_and_says_nothing(
    monkeypatch: pytest.MonkeyPatch, fake_local: type[FakeLocal]
) -> None:
    monkeypatch.delenv("MM2_TEST_KAFKA", raising=False)

    def engine() -> str | None:
        raise AssertionError("local mode must not ask for a Docker engine")

    said: list[str] = []
    with launch_clusters(["primary"], said.append, engine=engine, local=fake_local):
        pass
    assert said == [] and fake_local.started == [["primary"]]


def test_with_an_engine_docker_mode_uses_testcontainers_not_the_launcher(
    monkeypatch: pytest.MonkeyPatch, fake_local: type[FakeLocal]
) -> None:
    started: list[list[str]] = []

    @contextmanager
    def docker(names: Sequence[str]) -> Iterator[list[DockerCluster]]:
        started.append(list(names))
        yield [DockerCluster(n, "localhost:32768") for n in names]

    monkeypatch.setattr(kafka_docker, "docker_clusters", docker)
    said: list[str] = []
    with launch_clusters(
        ["primary", "backup"], said.append, mode="docker", engine=lambda: None, local=fake_local
    ) as clusters:
        assert [c.name for c in clusters] == ["primary", "backup"]
    assert started == [["primary", "backup"]]
    assert said == [] and fake_local.started == []


def test_an_unknown_mode_is_refused(fake_local: type[FakeLocal]) -> None:
    with (
        pytest.raises(ValueError, match="MM2_TEST_KAFKA='podman': expected 'local' or 'docker'"),
        launch_clusters(["primary"], print, mode="podman", local=fake_local),
    ):
        pass
    assert fake_local.started == []


# -- what docker mode hands the apache/kafka image -----------------------------------------------


def test_the_image_is_apache_kafka_of_the_launchers_version() -> None:
    assert IMAGE.split(":") == ["apache/kafka", KAFKA_VERSION]


def test_settings_become_the_images_environment_names() -> None:
    assert environment_name("offsets.topic.replication.factor") == (
        "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR"
    )
    assert environment_name("a_b.c-d") == "KAFKA_A__B_C___D"


def test_docker_brokers_get_the_local_launchers_defaults_and_kraft() -> None:
    env = broker_environment()
    for key, value in BROKER_DEFAULTS.items():
        assert env[environment_name(key)] == value
    assert env["KAFKA_PROCESS_ROLES"] == "broker,controller"
    assert env["KAFKA_CONTROLLER_QUORUM_VOTERS"] == "1@localhost:9094"
    listeners = {item.split("://")[0] for item in env["KAFKA_LISTENERS"].split(",")}
    mapped = {item.split(":")[0] for item in env["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"].split(",")}
    assert listeners == mapped == {"PLAINTEXT", "BROKER", "CONTROLLER"}


def test_the_start_script_advertises_the_mapped_port_and_runs_the_images_start() -> None:
    script = start_script("localhost", 32771).decode()
    lines = script.splitlines()
    advertised = "PLAINTEXT://localhost:32771,BROKER://$(hostname -i):9092"
    assert lines[1] == f"export KAFKA_ADVERTISED_LISTENERS={advertised}"
    assert lines[-1] == "exec /etc/kafka/docker/run"


def test_cluster_ids_are_kraft_uuids() -> None:
    import base64

    first, second = cluster_id(), cluster_id()
    assert first != second and len(first) == 22
    assert len(base64.urlsafe_b64decode(first + "==")) == 16


def test_the_container_sets_up_apache_kafka_not_confluents_image(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without an engine: testcontainers' client is replaced, the rest is the real class."""
    import testcontainers.core.container as container_module

    monkeypatch.setattr(container_module, "DockerClient", lambda **kw: object())
    container = kafka_docker.apache_kafka_container()(image=IMAGE, port=9093)
    container.configure()
    for key, value in broker_environment().items():
        assert container.env[key] == value
    assert len(container.env["CLUSTER_ID"]) == 22
    assert container.wait_for.match("[KafkaRaftServer nodeId=1] Kafka Server started")
    assert not any("confluent" in str(v) for v in container.env.values())

    written: list[tuple[bytes, str]] = []
    monkeypatch.setattr(container, "get_exposed_port", lambda port: "32771" if port == 9093 else "")
    monkeypatch.setattr(container, "get_container_host_ip", lambda: "localhost")
    monkeypatch.setattr(container, "create_file", lambda data, path: written.append((data, path)))
    container.tc_start()
    assert written == [(start_script("localhost", 32771), container.TC_START_SCRIPT)]
