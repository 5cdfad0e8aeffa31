"""The unplanned failover report, on real brokers.

The flow is paused while a backlog is written, then resumed: the mirror copies it slowly (its
source consumer fetches one record batch at a time) and is killed with SIGKILL half-way. Pausing
makes the copy start behind the whole backlog, however fast the producer is on a loaded machine.
Then, with the source unreachable (the config points it at a closed port), `mm2 failover
--dry-run` reads from the target alone, per source partition, how far the mirror copied and the
last source end it read: no bound (the source does not answer), unknown since then, and the
offsets below that end not copied must be the records the test knows were not copied.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import httpx
import pytest
from confluent_kafka import Producer

from mm2.client import MirrorClient
from mm2.config import load
from mm2.copy.positions import PositionsTopic
from mm2.policies.replication import DefaultReplicationPolicy
from tests.support.kafka import Cluster, commit_group, count, create_topic
from tests.support.mirror import MirrorProcess, free_port, write_properties
from tests.support.waiting import eventually

pytestmark = [pytest.mark.integration, pytest.mark.slow]

FIRST, BACKLOG = 10, 60_000
RECORDS = FIRST + BACKLOG


def produce_one_per_batch(bootstrap: str, topic: str, start: int, n: int) -> None:
    """One record per batch, so that one fetch of the mirror returns one record."""
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 0,
            "enable.idempotence": True,
            "batch.num.messages": 1,
        }
    )
    for i in range(start, start + n):
        while True:
            try:
                producer.produce(topic, b"r-%d" % i, partition=0)
                break
            except BufferError:
                producer.poll(0.2)
    assert producer.flush(60) == 0


def flow_state(api: httpx.Client) -> str | None:
    try:
        state = api.get("/flows/primary/backup").json().get("state")
    except (httpx.HTTPError, ValueError):
        return None
    return state if isinstance(state, str) else None


def test_a_killed_mirror_leaves_a_recovery_point_that_counts_the_records_not_copied(
    primary: Cluster, backup: Cluster, tmp_path: Path
) -> None:
    topic = create_topic(primary, f"rp-{uuid.uuid4().hex[:8]}")
    produce_one_per_batch(primary.bootstrap_servers, topic, 0, FIRST)
    group = f"rp-group-{uuid.uuid4().hex[:8]}"
    commit_group(primary.bootstrap_servers, group, {(topic, 0): 5})
    port = free_port()
    # One record batch per fetch: the copy lags well behind the end it has seen.
    extra = (
        f"offset.storage.topic = mm2-offsets.{uuid.uuid4().hex[:8]}.internal\n"
        "primary.consumer.max.partition.fetch.bytes = 1\n"
        f"listeners = http://127.0.0.1:{port}\n"
    )
    props = write_properties(
        tmp_path, primary.bootstrap_servers, backup.bootstrap_servers, topic, extra
    )
    api = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30)

    positions = PositionsTopic.of(load(props).flow("primary", "backup"))

    def seen() -> tuple[int, int] | None:
        """(next offset copied, end) of our partition once the target holds the whole
        backlog's end (the mirror read it) and a position after the resume."""
        stored = positions.read(10, ensure=False, stable=True)
        end = stored.source_ends.get((topic, 0), (0, 0))[0]
        at = stored.offsets.get((topic, 0), -1) + 1
        return (at, end) if end == RECORDS and at > FIRST else None

    checkpoints = MirrorClient(backup.client_config(), DefaultReplicationPolicy())
    try:
        with MirrorProcess(props) as mirror:
            eventually(
                lambda: checkpoints.remote_consumer_offsets(group, "primary"),
                timeout=180,
                what="a checkpoint of the group",
                log=mirror.log,
            )
            # Paused while the backlog is written: the copy starts behind all of it.
            assert api.put("/flows/primary/backup/pause").status_code == 202
            eventually(
                lambda: flow_state(api) == "PAUSED", timeout=120, what="PAUSED", log=mirror.log
            )
            produce_one_per_batch(primary.bootstrap_servers, topic, FIRST, BACKLOG)
            assert api.put("/flows/primary/backup/resume").status_code == 202
            row = eventually(seen, timeout=120, what="the end seen", log=mirror.log)
            mirror.kill9_tree()
    finally:
        api.close()
    assert row[0] < RECORDS, f"the copy was too fast for this test: {row}"
    remote = f"primary.{topic}"
    copied = count(backup.bootstrap_servers, remote)  # read_committed: what the mirror committed
    assert 0 < copied < RECORDS, f"the mirror copied {copied} of {RECORDS} before it was killed"

    gone = tmp_path / "source-gone.properties"
    gone.write_text(
        props.read_text(encoding="utf-8").replace(
            f"primary.bootstrap.servers = {primary.bootstrap_servers}",
            "primary.bootstrap.servers = 127.0.0.1:1",
        ),
        encoding="utf-8",
    )
    command = [
        sys.executable,
        "-m",
        "mm2.cli.tools",
        "failover",
        "--config",
        str(gone),
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
    out = subprocess.run(
        [*command, "--json"], capture_output=True, text=True, timeout=180, check=False
    )
    assert out.returncode == 0, out.stderr[-3000:]
    point = json.loads(out.stdout)["recovery_point"]
    (rp,) = [r for r in point["partitions"] if r["topic"] == topic]
    assert rp["copied_to"] == copied, rp
    assert rp["source_end"] == RECORDS, rp
    # The source does not answer: no bound, but what it knew is not copied.
    assert rp["at_risk_at_most"] is None and rp["current"] is False, rp
    assert rp["uncopied_below_end"] == RECORDS - copied, rp
    assert rp["unknown_since_ms"] == rp["ends_read_at_ms"] > 0, rp
    assert point["at_risk_at_most"] is None and point["unknown_since_ms"] is not None, point
    text = subprocess.run(command, capture_output=True, text=True, timeout=180, check=False)
    assert text.returncode == 0, text.stderr[-3000:]
    assert "recovery point of primary->backup" in text.stdout, text.stdout
    report = text.stdout.split("recovery point of primary->backup", 1)[1]
    (line,) = [x.split() for x in report.splitlines() if x.startswith(f"{topic}-0 ")]
    assert (line[1], line[2], line[-2], line[-1]) == (
        str(copied),
        str(RECORDS),
        "unknown",
        str(RECORDS - copied),
    )
