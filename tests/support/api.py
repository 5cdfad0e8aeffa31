"""A MirrorMaker on fake Mirror* plugins (no network), for the REST unit tests; a pytest plugin
(tests/conftest.py) with the `mirror` and `client` fixtures."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import ClassVar

import pytest
from fastapi.testclient import TestClient

from mm2.api.app import create_app
from mm2.config import load_properties, parse_properties
from mm2.connect.spi import Connector, Task, TaskContext
from mm2.copy.position_record import StoredPositions
from mm2.runtime.changes import ChangeStore
from mm2.runtime.mirror_maker import MirrorMaker
from mm2.runtime.offsets import MirrorSourceOffsets
from mm2.runtime.task_runner import Backoff

PROPERTIES = """
clusters = primary, backup
primary.bootstrap.servers = localhost:1
backup.bootstrap.servers = localhost:2
primary->backup.enabled = true
primary->backup.topics = orders.*
primary.sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule required \
  username="u" password="secret-pw";
"""


class FakeTask(Task):
    polls: ClassVar[dict[str, int]] = {}
    lock = threading.Lock()

    def start(self, config: Mapping[str, str], context: TaskContext) -> None:
        self.key = f"{context.flow}|{context.connector}"
        if config.get("fail") == "true":
            raise RuntimeError("told to fail")

    def poll(self) -> float:
        with self.lock:
            self.polls[self.key] = self.polls.get(self.key, 0) + 1
        return 0.01

    def stop(self) -> None:
        pass


class FakeConnector(Connector):
    task_class = FakeTask
    # The config each connector last started with, by "<source>-><target>|<class>".
    started: ClassVar[dict[str, dict[str, str]]] = {}

    def start(self, config: Mapping[str, str]) -> None:
        self.config = dict(config)
        key = f"{config.get('source.cluster.alias')}->{config.get('target.cluster.alias')}"
        self.started[f"{key}|{config.get('name')}"] = dict(config)

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.config)]


class MirrorSourceConnector(FakeConnector):
    pass


class MirrorHeartbeatConnector(FakeConnector):
    pass


PLUGINS: dict[str, type[Connector]] = {
    "MirrorSourceConnector": MirrorSourceConnector,
    "MirrorHeartbeatConnector": MirrorHeartbeatConnector,
}


def polls(key: str) -> int:
    with FakeTask.lock:
        return FakeTask.polls.get(key, 0)


class MemoryPositions:
    """Positions kept in memory: the REST layer's view of the offsets topic, without Kafka."""

    def __init__(self, source_alias: str) -> None:
        self.source_alias = source_alias
        self.offsets: dict[tuple[str, int], int] = {}
        self.topics: dict[str, int] = {"orders": 3, "orders-eu": 1, "payments": 2}

    def source_topics(self) -> dict[str, int]:
        return dict(self.topics)

    def read(self) -> StoredPositions:
        positions = StoredPositions()
        positions.offsets.update(self.offsets)
        return positions

    def write(self, positions: Mapping[tuple[str, int], int | None]) -> None:
        for tp, offset in positions.items():
            if offset is None:
                self.offsets.pop(tp, None)
            else:
                self.offsets[tp] = offset


def make_mirror(state: Path, text: str = PROPERTIES) -> MirrorMaker:
    config = load_properties(parse_properties(text, "mm2.properties"))
    stores: dict[str, MemoryPositions] = {}

    def positions(c: Mapping[str, str]) -> MemoryPositions:
        return stores.setdefault(
            c["source.cluster.alias"], MemoryPositions(c["source.cluster.alias"])
        )

    offsets = MirrorSourceOffsets(positions)
    return MirrorMaker(
        config,
        PLUGINS,
        ChangeStore(state / "rest-changes.json"),
        offsets={"MirrorSourceConnector": offsets},
        worker_id="w1",
        backoff=Backoff(0.01, 0.05),
    )


@pytest.fixture
def mirror(tmp_path: Path) -> Iterator[MirrorMaker]:
    """A started MirrorMaker on the fake plugins, its state under tmp_path; stopped after."""
    started = make_mirror(tmp_path, PROPERTIES + f"mm2.state.dir = {tmp_path / 'state'}\n")
    started.start()
    yield started
    started.stop()


@pytest.fixture
def client(mirror: MirrorMaker) -> TestClient:
    """The REST API of `mirror`, in process."""
    return TestClient(create_app(mirror))
