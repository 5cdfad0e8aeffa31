"""Leader and standby without Kafka: config topics and elections in memory, real runtimes.

The broker-backed takeover is tests/integration/test_standby.py; here each rule on its own:
who runs a flow, where REST requests go, how changes reach a standby, and that secrets given
over REST are sealed wherever they are stored.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from fastapi.testclient import TestClient

from mm2.api.app import create_app
from mm2.api.forward import FORWARDED, route
from mm2.api.routed_flows import RoutedFlows
from mm2.config import load_properties, parse_properties
from mm2.config.model import Flow
from mm2.errors import BadRequestError, ConfigError, ConflictError
from mm2.runtime.changes import Changes, ChangeStore
from mm2.runtime.leader_probe import LeaderProbe
from mm2.runtime.mirror_maker import MirrorMaker
from mm2.runtime.secrets import SealedChanges, SecretBox
from mm2.runtime.standby import Coordinator
from mm2.runtime.task_runner import Backoff
from tests.support.api import PLUGINS
from tests.support.mirror import free_port
from tests.support.waiting import eventually

PROPERTIES = """
clusters = primary, backup
primary.bootstrap.servers = localhost:1
backup.bootstrap.servers = localhost:2
primary->backup.enabled = true
primary->backup.emit.heartbeats.enabled = false
backup->primary.emit.heartbeats.enabled = false
"""
SOURCE = "primary.backup.MirrorSourceConnector"
SECRET = 'org.apache.kafka.common.security.plain.PlainLoginModule required password="pw-42";'


class Topic:
    """One config topic: its records, and the readers that follow it."""

    def __init__(self) -> None:
        self.records: list[tuple[str, dict[str, Any] | None]] = []
        self.readers: list[Callable[[str, dict[str, Any] | None], None]] = []


class MemoryLog:
    def __init__(self, alias: str, topic: Topic) -> None:
        self.alias, self.topic, self._topic = alias, "mm2-configs.internal", topic

    def write(self, key: str, value: dict[str, Any] | None, *, timeout: float = 30.0) -> None:
        copy = None if value is None else json.loads(json.dumps(value))
        self._topic.records.append((key, copy))
        for reader in list(self._topic.readers):
            reader(key, copy)

    def follow(
        self,
        on_record: Callable[[str, dict[str, Any] | None], None],
        stopping: threading.Event,
        on_end: Callable[[], None] = lambda: None,
    ) -> threading.Thread:
        for key, value in list(self._topic.records):
            on_record(key, value)
        on_end()
        self._topic.readers.append(on_record)
        return threading.current_thread()

    def close(self) -> None:
        pass


class Vote:
    """An election this test decides."""

    def __init__(self, on_change: Callable[[bool], None]) -> None:
        self.leader = False
        self._on_change = on_change

    def start(self) -> None:
        pass

    def stop(self, timeout: float = 5.0) -> None:
        self.set(False)

    def rejoin(self) -> None:  # leaves the group: the seat goes to another member
        self.set(False)

    def set(self, leader: bool) -> None:
        if leader != self.leader:
            self.leader = leader
            self._on_change(leader)


class Node:
    """One connect-mirror-maker process: its runtime and its votes."""

    def __init__(
        self,
        url: str,
        topics: dict[str, Topic],
        state: Path,
        key: str | None,
        probe: LeaderProbe | None = None,
        extra: str = "",
    ) -> None:
        text = PROPERTIES + extra + (f"mm2.rest.secrets.key = {key}\n" if key else "")
        config = load_properties(parse_properties(text, "mm2.properties"))
        self.votes: dict[str, Vote] = {}
        self.topics = topics
        box = SecretBox(key)

        def make_log(flow: Flow) -> MemoryLog:
            return MemoryLog(flow.target, topics.setdefault(flow.target, Topic()))

        def elect(alias: str, on_change: Callable[[bool], None]) -> Vote:
            return self.votes.setdefault(alias, Vote(on_change))

        self.coordinator = Coordinator(
            worker_id=url,
            url=url,
            home="backup",
            logs=make_log,
            elect=elect,
            box=box,
            probe=probe,
        )
        for flow in config.flows:
            self.coordinator.watch(flow)
        self.store = ChangeStore(state / "rest-changes.json", codec=SealedChanges(box))
        stored = self.coordinator.initial_changes(timeout=1)
        if stored is not None:
            self.store.replace(stored)
        self.mirror = MirrorMaker(
            config,
            PLUGINS,
            self.store,
            coordinator=self.coordinator,
            worker_id=url,
            backoff=Backoff(0.01, 0.05),
        )
        self.mirror.start()
        self.coordinator.start_elections()

    def lead(self, *clusters: str, leading: bool = True) -> None:
        for alias in clusters:
            self.votes[alias].set(leading)


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[tuple[Node, Node]]:
    topics: dict[str, Topic] = {}
    a = Node("http://a:8083", topics, tmp_path / "a", "shared-key")
    b = Node("http://b:8083", topics, tmp_path / "b", "shared-key")
    yield a, b
    a.mirror.stop()
    b.mirror.stop()


def state(node: Node, name: str = SOURCE) -> str:
    return node.mirror.connectors.status(name).state


def test_only_the_leader_runs_a_clusters_flows(pair: tuple[Node, Node]) -> None:
    a, b = pair
    assert state(a) == state(b) == "UNASSIGNED"  # nobody elected yet
    a.lead("backup")
    eventually(lambda: state(a) == "RUNNING", timeout=10, what="a RUNNING")
    assert state(b) == "UNASSIGNED"
    assert b.mirror.leadership.leaders()["backup"] is not None
    assert b.mirror.leadership.leaders()["backup"].url == "http://a:8083"  # type: ignore[union-attr]
    assert a.mirror.leadership.leads("primary->backup") and not b.mirror.leadership.leads(
        "primary->backup"
    )
    # The leader dies: its votes go to the standby, which starts the flow.
    a.lead("backup", leading=False)
    assert state(a) == "UNASSIGNED"
    b.lead("backup")
    eventually(lambda: state(b) == "RUNNING", timeout=10, what="b RUNNING")


def test_changes_on_the_leader_reach_the_standby_through_kafka(pair: tuple[Node, Node]) -> None:
    a, b = pair
    a.lead("backup")
    a.mirror.connectors.pause(SOURCE)
    assert state(a) == "PAUSED"
    assert state(b) == "PAUSED"  # the target state arrived, the herder stays idle
    a.mirror.connectors.patch_config(SOURCE, {"topics": "orders.*"})
    assert b.mirror.connectors.info(SOURCE).config["topics"] == "orders.*"
    # A change this process may not make (it does not lead backup) is refused, not lost.
    with pytest.raises(ConflictError):
        b.mirror.connectors.resume(SOURCE)
    a.lead("backup", leading=False)
    b.lead("backup")
    assert state(b) == "PAUSED"  # the new leader honours the pause made on the old one
    b.mirror.connectors.resume(SOURCE)
    eventually(lambda: state(b) == "RUNNING", timeout=10, what="b RUNNING")


def test_a_new_process_starts_from_the_changes_in_kafka(tmp_path: Path) -> None:
    topics: dict[str, Topic] = {}
    a = Node("http://a:8083", topics, tmp_path / "a", "k")
    a.lead("backup")
    a.mirror.connectors.stop(SOURCE)
    a.mirror.stop()
    late = Node("http://c:8083", topics, tmp_path / "c", "k")  # another host, empty state dir
    try:
        assert state(late) == "STOPPED"
    finally:
        late.mirror.stop()


def test_requests_go_where_the_work_is(pair: tuple[Node, Node]) -> None:
    a, b = pair
    a.lead("backup")
    here = route(a.mirror, "PUT", "/flows/primary/backup/pause")
    assert here == (None, False)
    leader, read = route(b.mirror, "PUT", "/flows/primary/backup/pause")
    assert leader is not None and leader.url == "http://a:8083" and not read
    leader, read = route(b.mirror, "GET", f"/connectors/{SOURCE}/status")
    assert leader is not None and leader.url == "http://a:8083" and read
    leader, _ = route(b.mirror, "POST", f"/connectors/{SOURCE}/tasks/0/restart")
    assert leader is not None and leader.url == "http://a:8083"
    assert route(b.mirror, "GET", "/connectors")[0] is None  # lists: any process
    # Offsets: read by any process from Kafka; changed by the process that runs the flow.
    assert route(b.mirror, "GET", f"/connectors/{SOURCE}/offsets") == (None, True)
    for method in ("PATCH", "DELETE"):
        leader, read = route(b.mirror, method, f"/connectors/{SOURCE}/offsets")
        assert leader is not None and leader.url == "http://a:8083" and not read
    assert route(a.mirror, "DELETE", f"/connectors/{SOURCE}/offsets") == (None, False)
    # While nobody leads the cluster that keeps changes, a change gets 409, not a guess.
    a.lead("backup", leading=False)
    b.coordinator._leaders.clear()
    with pytest.raises(ConflictError, match="no leader for backup"):
        route(b.mirror, "PUT", "/flows/primary/backup/pause")


def test_secrets_are_sealed_in_kafka_and_in_the_cache(
    pair: tuple[Node, Node], tmp_path: Path
) -> None:
    a, b = pair
    a.lead("backup")
    a.mirror.connectors.patch_config(SOURCE, {"sasl.jaas.config": SECRET})
    assert b.mirror.connectors.info(SOURCE).config["sasl.jaas.config"] == SECRET
    for path in (tmp_path / "a" / "rest-changes.json", tmp_path / "b" / "rest-changes.json"):
        assert "pw-42" not in path.read_text(), path
    in_kafka = json.dumps(a.topics["backup"].records)
    assert "sasl.jaas.config" in in_kafka and "pw-42" not in in_kafka


def test_a_secret_without_a_key_is_refused_with_the_key_to_set(tmp_path: Path) -> None:
    topics: dict[str, Topic] = {}
    node = Node("http://a:8083", topics, tmp_path, None)
    try:
        node.lead("backup")
        with pytest.raises(BadRequestError, match=r"mm2\.rest\.secrets\.key"):
            node.mirror.connectors.patch_config(SOURCE, {"sasl.jaas.config": SECRET})
        # A config provider reference is not a secret: kept as given.
        ref = "${file:/etc/mm2/jaas.properties:jaas}"
        node.mirror.connectors.patch_config(SOURCE, {"sasl.jaas.config": ref})
        assert node.mirror.connectors.info(SOURCE).config["sasl.jaas.config"] == ref
        assert any(ref in json.dumps(v) for _, v in topics["backup"].records)
    finally:
        node.mirror.stop()


def test_sealed_values_open_only_with_the_same_key() -> None:
    sealed = SecretBox("one").seal("ssl.key.password", "hunter2")
    assert "hunter2" not in sealed
    assert SecretBox("one").open("ssl.key.password", sealed) == "hunter2"
    with pytest.raises(ConfigError, match=r"another mm2\.rest\.secrets\.key"):
        SecretBox("two").open("ssl.key.password", sealed)
    with pytest.raises(ConfigError, match=r"set mm2\.rest\.secrets\.key"):
        SecretBox(None).open("ssl.key.password", sealed)
    assert SecretBox(None).seal("topics", "orders") == "orders"  # not a secret


def test_an_older_change_file_still_loads(tmp_path: Path) -> None:
    path = tmp_path / "rest-changes.json"
    path.write_text(json.dumps({"target_states": {SOURCE: "PAUSED"}}))
    store = ChangeStore(path, codec=SealedChanges(SecretBox(None)))
    assert store.changes == Changes(target_states={SOURCE: "PAUSED"})


def test_a_malformed_changes_record_is_skipped_and_named(
    pair: tuple[Node, Node], caplog: pytest.LogCaptureFixture
) -> None:
    a, b = pair
    a.lead("backup")
    a.mirror.connectors.pause(SOURCE)
    cached = b.store.path.read_bytes()
    log = MemoryLog("backup", a.topics["backup"])
    log.write("rest-changes", {"version": 10**6, "changes": {"target_states": "PAUSED"}})
    assert "rest-changes" in caplog.text and "target_states" in caplog.text
    assert state(b) == "PAUSED" and b.store.path.read_bytes() == cached
    a.mirror.connectors.resume(SOURCE)  # the next good version still arrives
    assert state(b) == "UNASSIGNED"


def _latest_epoch(node: Node) -> str:
    records = [value for key, value in node.topics["backup"].records if key == "leader"]
    return str((records[-1] or {}).get("epoch")) if records else ""


def test_each_election_writes_a_leader_epoch_that_a_deposed_leader_no_longer_holds(
    pair: tuple[Node, Node],
) -> None:
    a, b = pair
    assert a.coordinator.leader_epoch("backup") is None  # nobody elected yet
    a.lead("backup")
    first = a.coordinator.leader_epoch("backup")
    assert first and _latest_epoch(a) == first  # written before its flows start
    a.lead("backup", leading=False)
    assert a.coordinator.leader_epoch("backup") is None
    b.lead("backup")
    second = b.coordinator.leader_epoch("backup")
    assert second and second != first and _latest_epoch(b) == second
    # a, paused past its session and back, still believes it leads: its epoch is not the one
    # in the topic, so its planner and copy tasks refuse to start (check_leader_epoch).
    a.lead("backup")
    assert a.coordinator.leader_epoch("backup") not in (None, first, second)


def probe_of(outcomes: dict[str, str], seen: list[str]) -> LeaderProbe:
    """A probe that finds each host's port as `outcomes` says, noting each outcome in `seen`."""

    def attempt(host: str, _port: int, _timeout: float) -> str:
        outcome = outcomes[host]
        seen.append(outcome)
        return outcome

    return LeaderProbe(attempt=attempt)


def test_a_standby_takes_over_when_the_leaders_port_refuses_and_the_old_leader_steps_down(
    tmp_path: Path,
) -> None:
    """kill -9 leaves the leader's seat in the group for a session; its closed port shows at
    once. A port that accepted and then refuses twice: the standby leads under a new epoch, and
    the old leader, should it still run, sees that newer epoch and gives its seat up."""
    outcomes = {"a": "accepted"}
    seen: list[str] = []  # what b's probe found, in order
    probe = probe_of(outcomes, seen)
    topics: dict[str, Topic] = {}
    a = Node("http://a:8083", topics, tmp_path / "a", "k")
    b = Node("http://b:8083", topics, tmp_path / "b", "k", probe=probe)
    try:
        a.lead("backup")
        eventually(lambda: state(a) == "RUNNING", timeout=10, what="a RUNNING")
        # Refusals prove a gone only after b's probe saw its port accept; twice, and no takeover.
        eventually(
            lambda: seen.count("accepted") >= 2, timeout=30, what="b's probe seeing a's port"
        )
        assert not b.coordinator.leads("backup")
        outcomes["a"] = "refused"
        eventually(lambda: b.coordinator.leads("backup"), timeout=10, what="b taking over")
        eventually(lambda: state(b) == "RUNNING", timeout=10, what="b RUNNING")
        assert _latest_epoch(b) == b.coordinator.leader_epoch("backup")
        # a was not gone after all: it sees b's newer epoch and steps down.
        eventually(lambda: not a.coordinator.leads("backup"), timeout=10, what="a stepping down")
        eventually(lambda: state(a) == "UNASSIGNED", timeout=10, what="a's flow stopped")
        # The group then gives b the seat: b keeps its epoch and its flows.
        epoch = b.coordinator.leader_epoch("backup")
        b.lead("backup")
        assert b.coordinator.leader_epoch("backup") == epoch and state(b) == "RUNNING"
    finally:
        a.mirror.stop()
        b.mirror.stop()


def test_a_port_that_never_accepted_or_does_not_answer_proves_nothing() -> None:
    seen = iter(["refused", "refused", "refused", "accepted", "silent", "refused", "refused"])
    probe = LeaderProbe(attempt=lambda _h, _p, _t: next(seen))
    url = "http://a:8083"
    # never accepted: refused three times is no proof (another host's loopback, say)
    assert [probe.gone(url) for _ in range(3)] == [False, False, False]
    # accepted, then silent (a lost host: wait for the session), then refused twice
    assert [probe.gone(url) for _ in range(4)] == [False, False, False, True]


def test_a_gone_leader_of_several_clusters_is_taken_over_on_each(tmp_path: Path) -> None:
    """One process often leads every target cluster of the file: when its port refuses, the
    standby takes each of them over, not only the first it probed."""
    outcomes = {"a": "accepted"}
    seen: list[str] = []  # what b's probe found, in order
    probe = probe_of(outcomes, seen)
    both = "backup->primary.enabled = true\n"
    topics: dict[str, Topic] = {}
    a = Node("http://a:8083", topics, tmp_path / "a", "k", extra=both)
    b = Node("http://b:8083", topics, tmp_path / "b", "k", probe=probe, extra=both)
    reverse = "backup.primary.MirrorSourceConnector"
    try:
        a.lead("backup", "primary")
        eventually(
            lambda: state(a) == state(a, reverse) == "RUNNING",
            timeout=10,
            what="a RUNNING both flows",
        )
        # Refusals prove a gone only after b's probe saw its port accept.
        eventually(lambda: "accepted" in seen, timeout=30, what="b's probe seeing a's port")
        outcomes["a"] = "refused"
        eventually(
            lambda: b.coordinator.leads("backup") and b.coordinator.leads("primary"),
            timeout=10,
            what="b taking over both clusters",
        )
        eventually(
            lambda: state(b) == state(b, reverse) == "RUNNING",
            timeout=10,
            what="b RUNNING both flows",
        )
    finally:
        a.mirror.stop()
        b.mirror.stop()


def test_any_nodes_flow_list_shows_the_leaders_view(tmp_path: Path) -> None:
    """A standby's `GET /flows` shows each flow as the leader that runs it sees it (its state
    and lag are real only there), naming that leader; with the leader silent, its own view."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    topics: dict[str, Topic] = {}
    a = Node(url, topics, tmp_path / "a", "k")
    b = Node("http://b:8083", topics, tmp_path / "b", "k")
    server = uvicorn.Server(uvicorn.Config(create_app(a.mirror), port=port, log_level="warning"))
    serving = threading.Thread(target=server.run, daemon=True)
    try:
        a.lead("backup")
        # The flow, tasks included (they start on threads of their own), as a's /flows shows it.
        eventually(
            lambda: a.mirror.flows.view("primary", "backup").state == "RUNNING",
            timeout=30,
            what="a's flow RUNNING",
        )
        serving.start()
        eventually(lambda: server.started, timeout=10, what="a's REST listener")
        client = TestClient(create_app(b.mirror))
        flows = {(f["source"], f["target"]): f for f in client.get("/flows").json()}
        assert flows[("primary", "backup")]["state"] == "RUNNING"
        assert flows[("primary", "backup")]["runs_on"] == url
        # b's own view says UNASSIGNED (it runs nothing): only the leader knows the state.
        server.should_exit = True
        serving.join(10)
        flows = {(f["source"], f["target"]): f for f in client.get("/flows").json()}
        assert flows[("primary", "backup")]["state"] == "UNASSIGNED"
        assert flows[("primary", "backup")]["runs_on"] == url
    finally:
        server.should_exit = True
        a.mirror.stop()
        b.mirror.stop()


def test_a_switchover_reads_each_flow_where_it_runs_and_changes_it_through_the_writer(
    tmp_path: Path,
) -> None:
    """The two clusters led by different processes: a runs primary->backup and keeps the REST
    changes (backup is home), b runs backup->primary. A switchover started on b is sent to a,
    and a switchover's FlowControl on either reads each flow's state from its runner and pauses
    or resumes through a: a state b only knows from afar is never taken as done."""
    ports = [free_port()]
    while len(ports) < 2:
        port = free_port()
        if port not in ports:
            ports.append(port)
    urls = [f"http://127.0.0.1:{p}" for p in ports]
    topics: dict[str, Topic] = {}
    both = "backup->primary.enabled = true\n"
    a = Node(urls[0], topics, tmp_path / "a", "k", extra=both)
    b = Node(urls[1], topics, tmp_path / "b", "k", extra=both)
    servers = [
        uvicorn.Server(uvicorn.Config(create_app(n.mirror), port=p, log_level="warning"))
        for n, p in ((a, ports[0]), (b, ports[1]))
    ]
    threads = [threading.Thread(target=s.run, daemon=True) for s in servers]
    try:
        a.lead("backup")
        b.lead("primary")
        for t in threads:
            t.start()
        eventually(lambda: all(s.started for s in servers), timeout=10, what="REST listeners")
        eventually(
            lambda: (
                a.mirror.flows.view("primary", "backup").state == "RUNNING"
                and b.mirror.flows.view("backup", "primary").state == "RUNNING"
            ),
            timeout=30,
            what="each flow RUNNING on its leader",
        )
        # b's own view of the flow a runs: not running here (the bug took this as the state).
        assert b.mirror.flows.view("primary", "backup").state != "RUNNING"
        leader, read = route(b.mirror, "POST", "/flows/primary/backup/switchover")
        assert leader is not None and leader.url == urls[0] and not read
        assert route(a.mirror, "POST", "/flows/primary/backup/switchover") == (None, False)
        leader, read = route(a.mirror, "GET", "/flows/backup/primary/switchover")
        assert leader is not None and leader.url == urls[1] and read

        on_b = RoutedFlows(b.mirror, {FORWARDED: urls[1]})
        on_a = RoutedFlows(a.mirror, {FORWARDED: urls[0]})
        assert on_b.state("primary", "backup") == "RUNNING"  # asked of a
        assert on_a.state("backup", "primary") == "RUNNING"  # asked of b
        assert on_b.state("nowhere", "backup") is None
        on_b.pause("primary", "backup")  # carried out by a, the writer
        eventually(
            lambda: on_b.state("primary", "backup") == "PAUSED",
            timeout=10,
            what="primary->backup PAUSED where it runs",
        )
        assert a.mirror.flows.view("primary", "backup").state == "PAUSED"
        on_a.pause("backup", "primary")  # a is the writer: here; b applies the change
        eventually(
            lambda: on_a.state("backup", "primary") == "PAUSED",
            timeout=10,
            what="backup->primary PAUSED where it runs",
        )
        on_b.resume("backup", "primary")  # b is no writer: sent to a
        eventually(
            lambda: b.mirror.flows.view("backup", "primary").state == "RUNNING",
            timeout=30,
            what="backup->primary RUNNING again on b",
        )
        # A runner that does not answer is named, never answered for from afar.
        servers[0].should_exit = True
        threads[0].join(10)
        with pytest.raises(ConflictError, match=urls[0].replace(".", r"\.")):
            on_b.state("primary", "backup")
    finally:
        for s in servers:
            s.should_exit = True
        a.mirror.stop()
        b.mirror.stop()
