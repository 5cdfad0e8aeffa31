"""Where the test clusters come from: the local launcher (mm2.localcluster), or with
MM2_TEST_KAFKA=docker the `apache/kafka` image through testcontainers when a Docker engine
answers. Without one, docker mode says so in one line and the local launcher is used."""

from __future__ import annotations

import base64
import gc
import os
import re
import uuid
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

from mm2.localcluster import KAFKA_VERSION, LocalClusters
from mm2.localcluster.properties import BROKER_DEFAULTS

MODE_VARIABLE = "MM2_TEST_KAFKA"
IMAGE = f"apache/kafka:{KAFKA_VERSION}"
START_TIMEOUT = 180  # seconds; the first run pulls the image


class Cluster(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def bootstrap_servers(self) -> str: ...


@dataclass(frozen=True)
class DockerCluster:
    name: str
    bootstrap_servers: str


def engine_problem() -> str | None:
    """None when the Docker engine testcontainers would use answers a ping; else why not."""
    try:
        from testcontainers.core.docker_client import DockerClient
    except ImportError as error:
        return f"testcontainers is not installed ({error.name})"
    problem = _ping(DockerClient)
    # docker-py leaves the engine's socket open when a request fails: collect it here, where
    # its ResourceWarning is expected, not in whichever test the collector runs next.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()
    return problem


def _ping(docker_client: Callable[..., Any]) -> str | None:
    try:
        client = docker_client(timeout=10).client
        try:
            client.ping()
        finally:
            client.close()
    except Exception as error:
        return "no Docker engine answers (" + " ".join(str(error).split())[:200] + ")"
    return None


@contextmanager
def launch_clusters(
    names: Sequence[str],
    say: Callable[[str], None],
    *,
    mode: str | None = None,
    engine: Callable[[], str | None] = engine_problem,
    local: Callable[[Sequence[str]], AbstractContextManager[Iterable[Cluster]]] = LocalClusters,
) -> Iterator[list[Cluster]]:
    """The named clusters, started, for as long as the block runs."""
    chosen = os.environ.get(MODE_VARIABLE, "local") if mode is None else mode
    if chosen not in {"local", "docker"}:
        raise ValueError(f"{MODE_VARIABLE}={chosen!r}: expected 'local' or 'docker'")
    if chosen == "docker":
        problem = engine()
        if problem is None:
            with docker_clusters(names) as clusters:
                yield clusters
            return
        say(f"{MODE_VARIABLE}=docker: {problem}; the local launcher starts the clusters instead")
    with local(names) as launched:
        yield list(launched)


# -- docker mode ---------------------------------------------------------------------------------


def environment_name(key: str) -> str:
    """A broker setting as the apache/kafka image reads it from the environment: `.` becomes `_`,
    `_` becomes `__` and `-` becomes `___`, upper case, prefixed with KAFKA_."""
    escaped = key.replace("_", "__").replace("-", "___").replace(".", "_")
    return f"KAFKA_{escaped.upper()}"


def broker_environment() -> dict[str, str]:
    """One KRaft node as the local launcher configures it (BROKER_DEFAULTS), with the listeners
    the Kafka module of testcontainers uses: PLAINTEXT on 9093 for the host (mapped to a free
    port and advertised as such at start), BROKER on 9092 between brokers, CONTROLLER on 9094."""
    settings: Mapping[str, str] = {
        **BROKER_DEFAULTS,
        "node.id": "1",
        "process.roles": "broker,controller",
        "listeners": "PLAINTEXT://0.0.0.0:9093,BROKER://0.0.0.0:9092,CONTROLLER://0.0.0.0:9094",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,BROKER:PLAINTEXT,"
        "CONTROLLER:PLAINTEXT",
        "inter.broker.listener.name": "BROKER",
        "controller.listener.names": "CONTROLLER",
        "controller.quorum.voters": "1@localhost:9094",
    }
    return {environment_name(key): value for key, value in settings.items()}


def cluster_id() -> str:
    """A fresh KRaft cluster id: 16 random bytes, URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode("ascii").rstrip("=")


def start_script(host: str, port: int) -> bytes:
    """What the container runs once the host port is known: advertise it, then the image's own
    start (/etc/kafka/docker/run formats the storage and launches the broker)."""
    advertised = f"PLAINTEXT://{host}:{port},BROKER://$(hostname -i):9092"
    return (
        f"#!/bin/bash\nexport KAFKA_ADVERTISED_LISTENERS={advertised}\nexec /etc/kafka/docker/run\n"
    ).encode()


def apache_kafka_container() -> type:
    """testcontainers' KafkaContainer made to run apache/kafka (imported only in docker mode).

    The Kafka module's container scripts Confluent's image; apache/kafka takes its settings from
    KAFKA_* variables. The module's start-up is kept: the container waits for a script that
    advertises the mapped port, and the module waits for the broker's log line."""
    from testcontainers.community.kafka import KafkaContainer

    class ApacheKafkaContainer(KafkaContainer):
        def configure(self) -> None:
            for key, value in broker_environment().items():
                self.with_env(key, value)
            self.with_env("CLUSTER_ID", cluster_id())
            self.wait_for = re.compile(r".*Kafka Server started.*")

        def tc_start(self) -> None:
            port = int(self.get_exposed_port(self.port))
            self.create_file(start_script(self.get_container_host_ip(), port), self.TC_START_SCRIPT)

    return ApacheKafkaContainer


@contextmanager
def docker_clusters(names: Sequence[str]) -> Iterator[list[Cluster]]:
    container_class = apache_kafka_container()
    with ExitStack() as stack:
        clusters: list[Cluster] = []
        for name in names:
            container = container_class(image=IMAGE, port=9093)
            stack.callback(container.stop)
            container.start(timeout=START_TIMEOUT)
            clusters.append(DockerCluster(name, container.get_bootstrap_server()))
        yield clusters
