"""The Kafka clusters tests run on, as fixtures (a pytest plugin, see tests/conftest.py).

`primary` and `backup` come from the launcher (mm2.localcluster), started once per session,
unless MM2_TEST_BOOTSTRAP_PRIMARY / MM2_TEST_BOOTSTRAP_BACKUP name running ones; with
MM2_TEST_KAFKA=docker from the apache/kafka image through testcontainers when a Docker engine
answers (tests/support/kafka_docker.py). A broker that cannot start fails the tests.

`cluster_pair` makes clusters of a module's own, for tests that halt, resume or kill them.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Protocol

import pytest

from mm2.localcluster import LocalClusters
from tests.support.kafka import KafkaCluster, create_topic, unique_name
from tests.support.kafka_docker import launch_clusters

_ENV = {"primary": "MM2_TEST_BOOTSTRAP_PRIMARY", "backup": "MM2_TEST_BOOTSTRAP_BACKUP"}


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


class ClusterPair(Protocol):
    """`cluster_pair("soak-source", "soak-target")` -> both started (LocalClusters)."""

    def __call__(
        self, source: str, target: str, *, workdir: Path | None = None
    ) -> LocalClusters: ...


@pytest.fixture(scope="module")
def cluster_pair() -> Iterator[ClusterPair]:
    """Two clusters of the calling module's own, started side by side and stopped when the
    module's tests are done (also when one fails), so a test may halt and resume them without
    disturbing the session's `primary` and `backup`. `workdir` keeps their data and logs there
    (default: a temporary directory)."""
    with contextlib.ExitStack() as stack:

        def make(source: str, target: str, *, workdir: Path | None = None) -> LocalClusters:
            return stack.enter_context(LocalClusters([source, target], workdir=workdir))

        yield make


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
        return create_topic(cluster, unique_name(prefix), partitions=partitions, config=config)

    return make


@pytest.fixture
def new_group() -> Callable[..., str]:
    """`new_group(prefix="g")` -> a fresh uuid consumer-group name."""

    def make(prefix: str = "g") -> str:
        return unique_name(prefix)

    return make
