"""What operators see is what is true: flow state, cause and lag read from Kafka.

Its own pair of clusters, because the target is halted (mm2.localcluster's halt/resume).
"""

from __future__ import annotations

import logging
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import Consumer, TopicPartition

from mm2.localcluster import LocalCluster, LocalClusters
from tests.support.clusters import ClusterPair
from tests.support.mirror import (
    ContinuousProducer,
    MirrorProcess,
    free_port,
    make_topic,
    mm2_json,
    write_properties,
)
from tests.support.waiting import eventually

# Each test waits on its own deadlines (an outage of up to 60 s, then catch-up) that add up to
# more than pytest's default 300 s on a loaded CI host: the timeout is only a backstop for hangs.
pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(900)]
log = logging.getLogger(__name__)


@pytest.fixture(scope="module")
def clusters(cluster_pair: ClusterPair) -> LocalClusters:
    return cluster_pair("truth-source", "truth-target")


def running(api: httpx.Client) -> bool:
    """True when the flow is RUNNING; otherwise raises naming its state, cause and lag, which
    `eventually` puts first in its message (before the mirror's log tail). Nothing outside the
    mirror helps it: a transaction a broker's stop left open is the mirror's own to end."""
    body = flow(api)
    if body.get("state") == "RUNNING":
        return True
    raise AssertionError(f"{body.get('state')}: {body.get('cause')} (lag {body.get('lag')})")


def commit_group(cluster: LocalCluster, group: str, topic: str) -> None:
    consumer = Consumer({**cluster.client_config(), "group.id": group, "enable.auto.commit": False})
    try:
        consumer.commit(offsets=[TopicPartition(topic, p, 5) for p in range(4)], asynchronous=False)
    finally:
        consumer.close()


def flow(api: httpx.Client, source: str = "primary", target: str = "backup") -> dict[str, Any]:
    try:
        answer = api.get(f"/flows/{source}/{target}")
    except httpx.HTTPError:
        return {}
    return answer.json() if answer.status_code == 200 else {}


def test_a_dead_target_paused_and_disabled_flows_are_shown_as_they_are(
    clusters: LocalClusters, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    source, target = clusters["truth-source"], clusters["truth-target"]
    topic = make_topic(source, "truth")
    port = free_port()
    props = write_properties(
        tmp_path,
        source.bootstrap_servers,
        target.bootstrap_servers,
        topic,
        f"listeners = http://127.0.0.1:{port}\n",
    )
    api = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30)
    load = ContinuousProducer(source, topic, rate=100, limit=10**9, seconds=3600)
    # Stopped however the test ends: left running it writes to the source until the session
    # ends, then logs "connection refused" every 50 ms, which buries pytest's summary.
    request.addfinalizer(load.stop)
    with MirrorProcess(props) as mirror:
        try:
            load.start()
            eventually(
                lambda: (
                    flow(api).get("state") == "RUNNING" and flow(api)["lag"]["records_copied"] > 100
                ),
                timeout=180,
                what="the flow RUNNING and copying",
                log=mirror.log,
            )
            every = api.get("/flows/primary/backup/partitions").json()
            rows = [r for r in every if r["topic"] == topic]  # heartbeats are mirrored too
            assert {r["partition"] for r in rows} == {0, 1, 2, 3}, every
            assert all(
                r["log_end"] > 0 and r["target_topic"] == f"primary.{topic}" for r in rows
            ), rows
            assert any(r["owner"] for r in rows), rows
            eventually(
                lambda: api.get("/health/flows").status_code == 200,
                timeout=60,
                what="/health/flows 200",
                log=mirror.log,
            )

            # `mm2 status` shows the same rows, from the REST API and from Kafka directly.
            url = f"http://127.0.0.1:{port}"
            by_url = mm2_json("status", "--url", url, timeout=120)["partitions"]
            assert {(r["topic"], r["partition"]) for r in by_url} >= {
                (r["topic"], r["partition"]) for r in rows
            }
            assert all(r["state"] in ("RUNNING", "DEGRADED") for r in by_url), by_url
            by_file = mm2_json("status", str(props), timeout=120)["partitions"]
            assert {(r["topic"], r["partition"]) for r in by_file} >= {
                (topic, p) for p in range(4)
            }, by_file
            assert all(
                r["log_end"] >= 0 and r["position"] is not None
                for r in by_file
                if r["topic"] == topic
            ), by_file
            text = subprocess.run(
                [sys.executable, "-m", "mm2.cli.tools", "status", "--url", url],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            assert text.splitlines()[0].split()[:3] == ["FLOW", "TOPIC", "PARTITION"], text

            # `mm2 lag --group`: a group's commits, log size and lag on the source.
            group = f"truth-{uuid.uuid4().hex[:8]}"
            commit_group(source, group, topic)
            rows = mm2_json("lag", str(props), "--group", group, timeout=120)
            assert {r["partition"] for r in rows if r["topic"] == topic} == {0, 1, 2, 3}, rows
            assert all(
                r["offset"] == 5 and r["log_size"] >= 5 and r["lag"] == r["log_size"] - 5
                for r in rows
                if r["topic"] == topic
            ), rows

            # The heartbeats-only flow says it does not replicate.
            other = flow(api, "backup", "primary")
            assert other["state"] == "DISABLED" and "enabled = false" in other["cause"], other

            # The target dies: the flow is not RUNNING, names why, and its lag grows.
            target.halt()  # clean: a crash mid-commit can hang a transaction (LocalCluster.halt)
            halted = time.monotonic()
            eventually(
                lambda: flow(api).get("state") not in ("RUNNING", None),
                timeout=90,
                what="the flow not RUNNING with the target down",
                log=mirror.log,
            )
            seen = time.monotonic() - halted
            down = flow(api)
            log.info(
                "%.1f s after the halt: %s (%s), lag %s",
                seen,
                down["state"],
                down["cause"],
                down["lag"],
            )
            assert down["cause"], down
            first = down["lag"]["records"]
            eventually(
                lambda: flow(api).get("lag", {}).get("records", 0) > first + 100,
                timeout=60,
                what="the lag growing while the target is down",
                log=mirror.log,
            )
            health = api.get("/health/flows")
            assert health.status_code == 503 and "primary->backup" in health.json()["causes"]
            # What the MirrorMakerFlowNotCopying alert (deploy/prometheus) fires on.
            scraped = api.get("/metrics").text
            flagged = [
                ln
                for ln in scraped.splitlines()
                if ln.startswith("mm2_flow_state{")
                and 'target="backup"' in ln
                and ln.endswith(" 1.0")
            ]
            assert len(flagged) == 1 and 'state="RUNNING"' not in flagged[0], flagged
        finally:
            target.resume()
        resumed = time.monotonic()
        eventually(
            lambda: running(api),
            timeout=240,
            what="RUNNING again after the target came back",
            log=mirror.log,
        )
        log.info("RUNNING again %.1f s after the target came back", time.monotonic() - resumed)
        eventually(
            lambda: flow(api)["lag"]["records"] < 200, timeout=240, what="caught up", log=mirror.log
        )

        # Paused: the records that wait are counted.
        assert api.put("/flows/primary/backup/pause").status_code == 202
        eventually(
            lambda: flow(api).get("state") == "PAUSED", timeout=60, what="PAUSED", log=mirror.log
        )
        time.sleep(2)
        before = flow(api)["lag"]["records"]
        eventually(
            lambda: flow(api)["lag"]["records"] >= before + 1000,
            timeout=90,
            what="the lag of a paused flow growing",
            log=mirror.log,
        )
        assert "paused" in flow(api)["cause"]
        load.stop()
        load.join()
        assert api.put("/flows/primary/backup/resume").status_code == 202
        eventually(
            lambda: flow(api).get("state") == "RUNNING" and flow(api)["lag"]["records"] == 0,
            timeout=180,
            what="resumed and caught up",
            log=mirror.log,
        )
        api.close()
        assert mirror.stop() == 0, mirror.log()[-3000:]
