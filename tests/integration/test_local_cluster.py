"""The local-cluster launcher against real Apache Kafka brokers (and how it fails)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer

from mm2.errors import BrokerStartError, JarResolutionError, JavaNotFoundError
from mm2.kafka.admin import describe_cluster
from mm2.localcluster import LocalCluster, ports, resolve_classpath
from mm2.localcluster import cluster as cluster_module
from tests.support.kafka import Cluster, admin_client
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration


def _pid_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def _port_closed(address: str) -> bool:
    host, port = address.rsplit(":", 1)
    with socket.socket() as sock:
        return sock.connect_ex((host, int(port))) != 0


@contextlib.contextmanager
def _listening_socket() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


@pytest.mark.parametrize("which", ["primary", "backup"])
def test_produce_consume_round_trip(
    which: str, request: pytest.FixtureRequest, new_topic: Callable[..., str]
) -> None:
    cluster: Cluster = request.getfixturevalue(which)
    topic = new_topic(cluster, 3)
    producer = Producer(cluster.client_config())
    sent = {f"k{i}".encode(): f"v{i}".encode() for i in range(30)}
    for key, value in sent.items():
        producer.produce(topic, value, key, headers=[("h", key)])
    assert producer.flush(30) == 0
    consumer = Consumer(
        {
            **cluster.client_config(),
            "group.id": f"g-{uuid.uuid4().hex}",
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([topic])
    got: dict[bytes | None, bytes | None] = {}
    deadline = time.monotonic() + 60
    while len(got) < len(sent) and time.monotonic() < deadline:
        message = consumer.poll(1.0)
        if message is None or message.error():
            continue
        assert message.headers() == [("h", message.key())]
        got[message.key()] = message.value()
    consumer.close()
    assert got == sent


def test_clusters_are_independent(
    primary: Cluster, backup: Cluster, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(primary, 2)
    assert primary.bootstrap_servers != backup.bootstrap_servers
    on_primary = admin_client(primary.client_config()).list_topics(timeout=10).topics
    on_backup = admin_client(backup.client_config()).list_topics(timeout=10).topics
    assert topic in on_primary
    assert topic not in on_backup
    ids = {describe_cluster(c.client_config()).cluster_id for c in (primary, backup)}
    assert len(ids) == 2


def test_stop_leaves_no_jvm_and_no_open_port() -> None:
    cluster = LocalCluster("solo").start()
    pid, workdir = cluster.pid, cluster.workdir
    addresses = list(cluster.listeners.values())
    assert pid is not None and cluster.running
    assert describe_cluster(cluster.client_config()).broker_ids == (1,)
    cluster.stop()
    assert _pid_gone(pid)
    assert all(_port_closed(a) for a in addresses)
    assert not workdir.exists()  # a temp dir we made is removed


def test_named_port_in_use_is_a_clear_error() -> None:
    with _listening_socket() as port:
        listeners = f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:0"
        cluster = LocalCluster("busy", broker_config={"listeners": listeners})
        with pytest.raises(BrokerStartError, match=rf"127\.0\.0\.1:{port}.*already in use"):
            cluster.start()
        assert cluster.pid is None  # refused before any JVM started


def test_picked_port_taken_before_bind_is_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    """Decision: a port the launcher picked and lost to a race is retried with fresh ports."""
    with _listening_socket() as taken:
        picks = iter([taken])
        real = ports.free_port  # what cluster_module.free_port is until patched
        monkeypatch.setattr(cluster_module, "free_port", lambda: next(picks, None) or real())
        cluster = LocalCluster("race").start()
        try:
            assert cluster.bootstrap_servers != f"127.0.0.1:{taken}"
            assert "Address already in use" in cluster.log_path.read_text()  # it did collide
            assert describe_cluster(cluster.client_config()).broker_ids == (1,)
        finally:
            cluster.stop()


def test_broker_dying_during_start_reports_its_log() -> None:
    cluster = LocalCluster("broken", broker_config={"num.io.threads": "lots"})
    with pytest.raises(BrokerStartError) as caught:
        cluster.start()
    message = str(caught.value)
    assert str(cluster.log_path) in message
    assert "num.io.threads" in message  # Kafka's own complaint, from the log tail
    assert not cluster.running


def test_java_missing_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "nowhere"))
    with pytest.raises(JavaNotFoundError, match=r"JAVA_HOME=.*nowhere.*install a JDK 17"):
        LocalCluster("nojava").start()


def test_unknown_kafka_version_names_the_artifact(tmp_path: Path) -> None:
    version = "9.9.9-mm2-no-such-release"  # a release after 2.4: its Scala 2.13 build
    with pytest.raises(JarResolutionError, match=rf"kafka_2\.13:jar:{version}"):
        resolve_classpath(version, cache=tmp_path)


def test_unreachable_maven_central_is_named(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead = sock.getsockname()[1]  # nothing listens here once closed
    settings = tmp_path / "settings.xml"
    settings.write_text(
        "<settings><mirrors><mirror><id>dead</id><mirrorOf>*</mirrorOf>"
        f"<url>http://127.0.0.1:{dead}/maven2</url></mirror></mirrors></settings>"
    )
    options = ["-s", str(settings), f"-Dmaven.repo.local={tmp_path / 'repo'}"]
    with pytest.raises(JarResolutionError, match="Maven Central unreachable"):
        resolve_classpath(cache=tmp_path, maven_options=options)


_ORPHAN = """
import sys
from mm2.localcluster import LocalCluster
cluster = LocalCluster("orphan").start()
print(cluster.pid, cluster.bootstrap_servers, flush=True)
sys.stdin.read()
"""


def test_jvm_dies_with_a_sigkilled_parent() -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c", _ORPHAN], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert parent.stdout is not None
    pid_text, address = parent.stdout.readline().split()
    assert not _pid_gone(int(pid_text))
    parent.kill()
    parent.wait()
    eventually(
        lambda: _pid_gone(int(pid_text)),
        timeout=20,
        what="the JVM to die with its SIGKILLed parent",
        interval=0.1,
    )
    eventually(lambda: _port_closed(address), timeout=20, what=f"{address} closed", interval=0.1)


def test_cli_start_prints_addresses_and_stops_on_sigint(tmp_path: Path) -> None:
    cli = subprocess.Popen(
        [
            *(sys.executable, "-m", "mm2.cli.tools", "local-cluster", "start", "east", "west"),
            *("--json", "--workdir", str(tmp_path), "--broker-config", "num.partitions=2"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert cli.stdout is not None
    line = cli.stdout.readline()
    assert line, cli.stderr.read() if cli.stderr else ""
    started = json.loads(line)
    assert set(started["clusters"]) == {"east", "west"}
    pids = list(started["pids"].values())
    assert all(not _pid_gone(p) for p in pids)
    props = (tmp_path / "east" / "server.properties").read_text()
    assert "num.partitions=2" in props.splitlines()
    cli.send_signal(signal.SIGINT)
    assert cli.wait(timeout=60) == 0
    assert all(_pid_gone(p) for p in pids)
    assert all(_port_closed(a) for a in started["clusters"].values())
    assert (tmp_path / "west" / "data" / "meta.properties").exists()  # --workdir is kept
