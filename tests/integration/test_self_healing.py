"""Self-healing on real brokers: a target cluster that is down, then back, needs no restart call.

The heartbeat and checkpoint connectors run in a Herder for primary->outage, where `outage` is
a cluster of this module's own that the test halts and resumes on the same ports with its data
(mm2.localcluster's halt/resume). TopicSync is driven directly through the same outage.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition

from mm2.config import load
from mm2.config.model import Flow
from mm2.connectors.checkpoint import MirrorCheckpointConnector
from mm2.connectors.heartbeat import MirrorHeartbeatConnector
from mm2.connectors.topic_sync import TopicSync
from mm2.errors import KafkaClientError
from mm2.kafka.take import take
from mm2.kafka.topics import TopicAdmin
from mm2.localcluster import LocalCluster
from mm2.records import Heartbeat
from mm2.runtime.herder import Herder
from mm2.runtime.task_runner import Backoff
from tests.support.kafka import KafkaCluster
from tests.support.waiting import eventually

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PLUGINS = {cls.__name__: cls for cls in (MirrorHeartbeatConnector, MirrorCheckpointConnector)}
# Short delays so the test sees the recovery soon after the cluster is back.
QUICK = Backoff(initial_s=0.2, maximum_s=2.0, restart_initial_s=0.2, restart_maximum_s=2.0)


@pytest.fixture(scope="module")
def outage() -> Iterator[LocalCluster]:
    with LocalCluster("outage") as cluster:
        yield cluster


def flow_for(tmp_path: Path, primary: KafkaCluster, target: LocalCluster) -> Flow:
    lines = [
        "clusters = primary, outage",
        f"primary.bootstrap.servers = {primary.bootstrap_servers}",
        f"outage.bootstrap.servers = {target.bootstrap_servers}",
        "primary->outage.enabled = true",
        "replication.factor = 1",
        "heartbeats.topic.replication.factor = 1",
        "checkpoints.topic.replication.factor = 1",
        "offset-syncs.topic.replication.factor = 1",
        "emit.heartbeats.interval.seconds = 1",
        "emit.checkpoints.interval.seconds = 1",
        "refresh.groups.interval.seconds = 1",
        f"mm2.state.dir = {tmp_path / 'state'}",
    ]
    path = tmp_path / "mm2.properties"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return load(path).flow("primary", "outage")


def states(herder: Herder) -> dict[str, list[str]]:
    return {n: [t.state for t in herder.status(n).tasks] for n in herder.connector_names}


def heartbeats_since(bootstrap: str, since_ms: int) -> int:
    """Heartbeats on the target stamped after `since_ms`."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"hb-{uuid.uuid4().hex}"})
    try:
        tp = TopicPartition("heartbeats", 0)
        low, high = consumer.get_watermark_offsets(tp, timeout=5)
        consumer.assign([TopicPartition("heartbeats", 0, max(low, high - 20))])
        found = 0
        for msg in take(consumer, 100, 2.0):
            value = msg.value()
            if msg.error() is not None or value is None:
                continue
            if Heartbeat.from_record(msg.key() or b"", value).timestamp > since_ms:
                found += 1
        return found
    except Exception:  # the topic does not exist yet, or the cluster is still coming back
        return 0
    finally:
        consumer.close()


def test_tasks_heal_after_the_target_was_down_at_start_and_during_the_run(
    tmp_path: Path, primary: KafkaCluster, outage: LocalCluster
) -> None:
    flow = flow_for(tmp_path, primary, outage)
    connectors = {name: flow.connector_config(name) for name in PLUGINS}
    herder = Herder(flow.name, connectors, PLUGINS, worker_id="test", backoff=QUICK)
    outage.halt(grace=0)  # the target is down when the mirror starts
    herder.start()
    try:
        # The heartbeat task creates its topic in start(): that times out (30 s) and is retried.
        eventually(
            lambda: herder.status("MirrorHeartbeatConnector").tasks[0].restarts > 0,
            timeout=60,
            what="the heartbeat task restarted after its start failed",
        )
        assert not any("FAILED" in s for s in states(herder).values()), states(herder)
        heartbeat = herder.status("MirrorHeartbeatConnector").tasks[0]
        assert "creating internal topic heartbeats" in (heartbeat.trace or "")
        assert f"outage ({outage.bootstrap_servers})" in (heartbeat.trace or "")

        outage.resume()
        back = int(time.time() * 1000)
        eventually(
            lambda: all(s and set(s) == {"RUNNING"} for s in states(herder).values()),
            timeout=60,
            what=f"every task RUNNING after the target is back: {states(herder)}",
        )
        eventually(
            lambda: heartbeats_since(outage.bootstrap_servers, back) > 0,
            timeout=30,
            what="heartbeats on the target after it came back",
        )

        outage.halt()  # down again while the tasks run (clean: see LocalCluster.halt)
        time.sleep(20)
        assert not any("FAILED" in s for s in states(herder).values()), states(herder)
        outage.resume()
        back = int(time.time() * 1000)
        eventually(
            lambda: heartbeats_since(outage.bootstrap_servers, back) > 0,
            timeout=60,
            what="heartbeats on the target after the second outage",
        )
        eventually(
            lambda: all(s and set(s) == {"RUNNING"} for s in states(herder).values()),
            timeout=60,
            what=f"every task RUNNING after the second outage: {states(herder)}",
        )
    finally:
        herder.stop()


def test_topic_sync_retries_through_a_target_outage(
    tmp_path: Path, primary: KafkaCluster, outage: LocalCluster, new_topic: Callable[..., str]
) -> None:
    flow = flow_for(tmp_path, primary, outage)
    sync = TopicSync(
        flow,
        TopicAdmin(flow.source_admin_config(), timeout=3),
        TopicAdmin(flow.target_admin_config(), timeout=3),
    )
    outage.halt(grace=0)
    try:
        topic = new_topic(primary, 2, prefix="heal")
        with pytest.raises(KafkaClientError) as raised:
            sync.refresh_topics()
        assert raised.value.retriable, raised.value
        assert "outage (" in str(raised.value) and "_TRANSPORT" in str(raised.value)
    finally:
        outage.resume()
    remote = f"primary.{topic}"

    def routed() -> bool:
        try:
            return remote in {r.target_topic for r in sync.refresh_topics().values()}
        except KafkaClientError as exc:
            assert exc.retriable, exc
            return False

    eventually(routed, timeout=60, what=f"{remote} created on the target after the outage")
