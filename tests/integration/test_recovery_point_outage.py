"""The recovery point of a paused flow whose source dies, on real brokers.

The flow copies, is paused over REST while the source keeps taking 500 records/s, and the
source's broker is killed. The records it acknowledged and the mirror never copied are lost to
a failover; the report must never say fewer: a bound only while the source answers (it reads
the source's ends after the positions), and once it is gone, no number but "unknown since T",
with T a time the mirror read the ends at while the flow was paused (its lag reader keeps
reading and recording them), never the time the flow was paused. `mm2 failover --json`, its
text and `GET .../recovery-point` must say the same.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import KafkaError, Message, Producer

from mm2.client import MirrorClient
from mm2.config import load
from mm2.copy.positions import PositionsTopic
from mm2.localcluster import LocalCluster, LocalClusters
from mm2.policies.replication import DefaultReplicationPolicy
from tests.support.clusters import ClusterPair
from tests.support.kafka import commit_group, read_topic
from tests.support.mirror import MirrorProcess, free_port, make_topic, write_properties
from tests.support.waiting import eventually

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(900)]

PARTITIONS = 4
RATE = 500.0


@pytest.fixture(scope="module")
def clusters(cluster_pair: ClusterPair) -> LocalClusters:
    return cluster_pair("rpo-source", "rpo-target")


class AckedProducer:
    """Writes to every partition in turn at RATE records/s until stopped; keeps the offset of
    every record the source acknowledged (acks=all), per partition."""

    def __init__(self, cluster: LocalCluster, topic: str) -> None:
        settings = {
            "linger.ms": 5,
            "acks": "all",
            "enable.idempotence": True,
            "message.timeout.ms": 20_000,
        }
        self._producer = Producer({**cluster.client_config(), **settings})
        self._topic = topic
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self.acked: dict[int, list[int]] = {p: [] for p in range(PARTITIONS)}
        self._thread = threading.Thread(target=self._run, name="acked-producer", daemon=True)

    def _delivered(self, err: KafkaError | None, msg: Message) -> None:
        if err is None:
            with self._lock:
                self.acked[msg.partition() or 0].append(msg.offset() or 0)

    def _run(self) -> None:
        started, sent = time.monotonic(), 0
        while not self._stop.is_set():
            try:
                self._producer.produce(
                    self._topic,
                    b"r-%d" % sent,
                    partition=sent % PARTITIONS,
                    on_delivery=self._delivered,
                )
            except BufferError:
                self._producer.poll(0.2)
                continue
            sent += 1
            self._producer.poll(0)
            pause = started + sent / RATE - time.monotonic()
            if pause > 0:
                self._stop.wait(pause)
        self._producer.flush(30)  # the source gone: what is left fails, never acknowledged

    def counts(self) -> dict[int, int]:
        with self._lock:
            return {p: len(offsets) for p, offsets in self.acked.items()}

    def start(self) -> AckedProducer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(120)
        assert not self._thread.is_alive(), "the producer did not end"


def copied(target: LocalCluster, remote: str) -> dict[int, int]:
    """Records per partition of the remote topic, read_committed: what the mirror committed
    (a prefix of each source partition: transaction markers take offsets, records are counted)."""
    records = read_topic(target.bootstrap_servers, remote, **{"isolation.level": "read_committed"})
    return {p: len(records.get(p, [])) for p in range(PARTITIONS)}


def report(api: httpx.Client) -> dict[str, Any]:
    answer = api.get("/flows/primary/backup/recovery-point")
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def ours(point: dict[str, Any], topic: str) -> dict[int, dict[str, Any]]:
    return {r["partition"]: r for r in point["partitions"] if r["topic"] == topic}


def test_a_paused_flow_whose_source_dies_reports_no_bound_it_cannot_keep(
    clusters: LocalClusters, tmp_path: Path
) -> None:
    source, target = clusters["rpo-source"], clusters["rpo-target"]
    topic = make_topic(source, "rpo", PARTITIONS)
    remote = f"primary.{topic}"
    group = f"rpo-group-{uuid.uuid4().hex[:8]}"
    port = free_port()
    props = write_properties(
        tmp_path,
        source.bootstrap_servers,
        target.bootstrap_servers,
        topic,
        f"listeners = http://127.0.0.1:{port}\n"
        "emit.checkpoints.interval.seconds = 1\n"
        "sync.group.offsets.interval.seconds = 1\n",
    )
    flow = load(props).flow("primary", "backup")
    positions = PositionsTopic.of(flow)
    api = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60)
    checkpoints = MirrorClient(target.client_config(), DefaultReplicationPolicy())
    producer = AckedProducer(source, topic).start()
    try:
        eventually(lambda: producer.counts()[0] > 10, timeout=60, what="records on the source")
        commit_group(source.bootstrap_servers, group, {(topic, 0): 5})
        with MirrorProcess(props) as mirror:
            eventually(
                lambda: min(copied(target, remote).values()) > 0,
                timeout=240,
                what="records copied",
                log=mirror.log,
            )
            eventually(
                lambda: checkpoints.remote_consumer_offsets(group, "primary"),
                timeout=180,
                what="a checkpoint of the group",
                log=mirror.log,
            )
            assert api.put("/flows/primary/backup/pause").status_code == 202

            def paused() -> bool:
                return bool(api.get("/flows/primary/backup").json().get("state") == "PAUSED")

            eventually(paused, timeout=120, what="PAUSED", log=mirror.log)
            paused_ms = int(time.time() * 1000)

            def ends_read_while_paused() -> bool:
                ends = positions.read(10, ensure=False, stable=True).source_ends
                return all(ends.get((topic, p), (0, 0))[1] > paused_ms for p in range(PARTITIONS))

            # The copy tasks are gone; what reads the ends now is the lag reader.
            eventually(
                ends_read_while_paused,
                timeout=120,
                interval=2,
                what="the source's ends recorded while paused",
                log=mirror.log,
            )

            # While the source answers: a bound, read after the positions, never below what
            # is missing (what was acknowledged before the request and not copied).
            acked_before = producer.counts()
            held = copied(target, remote)
            live = report(api)
            assert live["at_risk_at_most"] is not None, live
            assert live["unknown_since_ms"] is None, live
            rows = ours(live, topic)
            for p in range(PARTITIONS):
                assert rows[p]["current"] is True, rows[p]
                assert rows[p]["at_risk_at_most"] >= acked_before[p] - held[p], (p, rows[p])

            source.halt(grace=0)  # the disaster: the source's broker dies (SIGKILL)
            producer.stop()
            held = copied(target, remote)
            missing = {
                p: sum(1 for o in producer.acked[p] if o >= held[p]) for p in range(PARTITIONS)
            }
            assert sum(missing.values()) > 0, (missing, held)

            def unknown() -> dict[str, Any] | None:
                body = report(api)
                return body if body["at_risk_at_most"] is None else None

            rest = eventually(
                unknown,
                timeout=180,
                interval=2,
                log=mirror.log,
                what="the mirror's report without the source",
            )
            command = [
                sys.executable,
                "-m",
                "mm2.cli.tools",
                "failover",
                "--config",
                str(props),
                "--from",
                "primary",
                "--to",
                "backup",
                "--group",
                group,
                "--dry-run",
                "--timeout",
                "10",
            ]
            done = subprocess.run(
                [*command, "--json"], capture_output=True, text=True, timeout=300, check=False
            )
            assert done.returncode == 0, done.stderr[-3000:]
            cli = json.loads(done.stdout)["recovery_point"]
            text = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
            assert text.returncode == 0, text.stderr[-3000:]
            again = report(api)
        assert mirror.stop() == 0, mirror.log()[-3000:]
    finally:
        producer.stop()
        api.close()

    for name, point in (
        ("mm2 failover --json", cli),
        ("GET recovery-point", rest),
        ("GET recovery-point after", again),
    ):
        # With the source gone no figure is a bound: unknown since the ends were last read,
        # which was while the flow was paused, not when it was paused.
        assert point["at_risk_at_most"] is None, (name, point)
        assert point["unknown_since_ms"] is not None, (name, point)
        assert point["unknown_since_ms"] > paused_ms, (name, point["unknown_since_ms"], paused_ms)
        assert point["source_problem"], (name, point)
        assert "unknown since" in point["summary"], (name, point["summary"])
        rows = ours(point, topic)
        assert sorted(rows) == list(range(PARTITIONS)), (name, rows)
        for p, row in rows.items():
            assert row["at_risk_at_most"] is None and row["current"] is False, (name, row)
            assert row["unknown_since_ms"] == row["ends_read_at_ms"] > paused_ms, (name, row)
            assert row["copied_to"] == held[p], (name, row, held)
        # What it knows, kept apart: the offsets below the last end read that are not copied
        # (none when the pause took effect after that read, on a loaded machine).
        for row in rows.values():
            below = max(0, row["source_end"] - row["copied_to"])
            assert row["uncopied_below_end"] == below, (name, row)
    # The three say the same: no end was read since the source died.
    for key in ("unknown_since_ms", "unknown_partitions", "uncopied_below_ends"):
        assert cli[key] == rest[key] == again[key], (key, cli[key], rest[key], again[key])
    assert ours(cli, topic) == ours(rest, topic) == ours(again, topic)
    assert cli["summary"].split(" (")[0] in text.stdout, text.stdout
    table = text.stdout.split("recovery point of primary->backup", 1)[1]
    lines = [x.split() for x in table.splitlines() if x.startswith(f"{topic}-")]
    assert len(lines) == PARTITIONS and all(line[-2] == "unknown" for line in lines), lines
