"""Shared fixtures: the `primary` and `backup` Kafka clusters, uuid topics and groups.

Clusters come from the launcher (mm2.localcluster), started once per session, unless
MM2_TEST_BOOTSTRAP_PRIMARY / MM2_TEST_BOOTSTRAP_BACKUP name running ones; with
MM2_TEST_KAFKA=docker from the apache/kafka image through testcontainers when a Docker engine
answers (tests/support/kafka_docker.py). A broker that cannot start fails the tests; a run
whose every integration test was skipped fails too.
"""

from __future__ import annotations

import contextlib
import os
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.kafka_docker import launch_clusters

_ENV = {"primary": "MM2_TEST_BOOTSTRAP_PRIMARY", "backup": "MM2_TEST_BOOTSTRAP_BACKUP"}


@dataclass(frozen=True)
class KafkaCluster:
    """A cluster a test talks to: its alias and where to bootstrap."""

    name: str
    bootstrap_servers: str

    def client_config(self) -> dict[str, str]:
        return {"bootstrap.servers": self.bootstrap_servers}


@pytest.fixture(scope="session")
def kafka_clusters(request: pytest.FixtureRequest) -> Iterator[dict[str, KafkaCluster]]:
    """primary and backup: external when the env names them, else launched together."""
    external = {name: os.environ[var] for name, var in _ENV.items() if os.environ.get(var)}
    to_launch = [name for name in _ENV if name not in external]
    found = {name: KafkaCluster(name, address) for name, address in external.items()}
    if not to_launch:
        yield found
        return
    # A BrokerStartError propagates: the fixture errors and every dependent test fails.
    with launch_clusters(to_launch, say=_say(request.config)) as launched:
        for cluster in launched:
            found[cluster.name] = KafkaCluster(cluster.name, cluster.bootstrap_servers)
        yield found


def _say(config: pytest.Config) -> Callable[[str], None]:
    """One line on the terminal, past output capture."""
    capture = config.pluginmanager.get_plugin("capturemanager")

    def say(line: str) -> None:
        with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
            print(f"\n{line}", file=sys.stderr, flush=True)

    return say


@pytest.fixture(scope="session")
def primary(kafka_clusters: dict[str, KafkaCluster]) -> KafkaCluster:
    return kafka_clusters["primary"]


@pytest.fixture(scope="session")
def backup(kafka_clusters: dict[str, KafkaCluster]) -> KafkaCluster:
    return kafka_clusters["backup"]


def create_topic(
    cluster: KafkaCluster,
    name: str,
    *,
    partitions: int = 1,
    config: dict[str, str] | None = None,
) -> str:
    """Create `name` on `cluster` and wait until the controller accepted it."""
    admin = AdminClient(cluster.client_config())
    topic = NewTopic(name, num_partitions=partitions, replication_factor=1, config=config or {})
    admin.create_topics([topic], operation_timeout=30, request_timeout=30)[name].result(timeout=60)
    return name


@pytest.fixture
def new_topic() -> Callable[..., str]:
    """`new_topic(cluster, partitions=1, prefix="t", config=None)` -> a fresh uuid-named topic."""

    def make(
        cluster: KafkaCluster,
        partitions: int = 1,
        *,
        prefix: str = "t",
        config: dict[str, str] | None = None,
    ) -> str:
        name = f"{prefix}-{uuid.uuid4().hex}"
        return create_topic(cluster, name, partitions=partitions, config=config)

    return make


@pytest.fixture
def new_group() -> Callable[..., str]:
    """`new_group(prefix="g")` -> a fresh uuid consumer-group name."""

    def make(prefix: str = "g") -> str:
        return f"{prefix}-{uuid.uuid4().hex}"

    return make


# -- a run in which every integration test was skipped is a failure ---------------------------

# Module state is fine here: pytest loads this conftest once per run.
_marked: set[str] = set()
_reached: set[str] = set()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "integration: needs real Kafka brokers (the launcher)")


def pytest_collection_finish(session: pytest.Session) -> None:
    _marked.clear()
    _marked.update(i.nodeid for i in session.items if i.get_closest_marker("integration"))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    body_ran = report.when == "call" and not report.skipped
    if report.nodeid in _marked and (body_ran or report.failed):
        _reached.add(report.nodeid)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _marked and not _reached:
        message = (
            f"all {len(_marked)} integration tests were skipped: brokers must run in this "
            "session (a skipped broker test is a failure, see tests/conftest.py)"
        )
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(f"ERROR: {message}", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
