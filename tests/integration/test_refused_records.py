"""Records the target refuses: judged, never looped.

A backlog into a remote topic that accepts smaller batches than librdkafka builds is copied
whole (the producer's batches stay within the topic's max.message.bytes); a refusal a person
must fix (a timestamp outside the remote topic's limits) ends the copy task FAILED with the
record and the broker's reason, instead of aborting and retrying for ever.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._config import AlterConfigOpType, ConfigEntry, ConfigResource
from confluent_kafka.admin._resource import ResourceType

from tests.support.kafka import Cluster, content, count, create_topic, read_topic
from tests.support.mirror import MirrorProcess, free_port, write_properties
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

SOURCE = "MirrorSourceConnector"


def _create(cluster: Cluster, name: str, partitions: int, **configs: str) -> None:
    create_topic(cluster, name, partitions=partitions, config=configs)


def _log_end(cluster: Cluster, topic: str) -> int:
    """Partition 0's log end: aborted copies and their markers move it, committed or not."""
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "mm2-ends"})
    try:
        return int(consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)[1])
    finally:
        consumer.close()


def _set_config(cluster: Cluster, topic: str, name: str, value: str) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    entry = ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[entry])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(30)


def test_a_backlog_into_a_topic_accepting_half_a_megabyte_batches_is_copied_whole(
    primary: Cluster, backup: Cluster, tmp_path: Path
) -> None:
    topic = f"narrow-{uuid.uuid4().hex[:8]}"
    limit = {"max.message.bytes": "512000"}
    _create(primary, topic, 2, **limit)
    _create(backup, f"primary.{topic}", 2, **limit)
    producer = Producer(
        {"bootstrap.servers": primary.bootstrap_servers, "linger.ms": 20, "batch.size": 400_000}
    )
    records = 40_000
    for i in range(records):  # 1 KiB each: librdkafka would fill ~1 MB batches from this
        producer.produce(topic, (b"%08d" % i) * 128, partition=i % 2)
        if i % 5_000 == 0:
            producer.flush(30)
    assert producer.flush(60) == 0
    props = write_properties(tmp_path, primary.bootstrap_servers, backup.bootstrap_servers, topic)
    remote = f"primary.{topic}"
    with MirrorProcess(props) as mirror:
        eventually(
            lambda: count(backup.bootstrap_servers, remote) >= records,
            timeout=240,
            what=f"{records} records on {remote}",
            log=mirror.log,
        )
        assert mirror.stop() == 0
    assert "larger than" not in mirror.log(), mirror.log()[-3000:]
    source = read_topic(primary.bootstrap_servers, topic)
    target = read_topic(backup.bootstrap_servers, remote, **{"isolation.level": "read_committed"})
    for p, rows in source.items():  # nothing lost, duplicated or reordered
        assert content(target.get(p, [])) == content(rows), f"partition {p}"


def test_a_timestamp_the_remote_topic_refuses_fails_the_task_naming_the_record(
    primary: Cluster, backup: Cluster, tmp_path: Path
) -> None:
    old, fresh = f"old-{uuid.uuid4().hex[:8]}", f"fresh-{uuid.uuid4().hex[:8]}"
    _create(primary, old, 1)
    _create(primary, fresh, 1)
    producer = Producer({"bootstrap.servers": primary.bootstrap_servers})
    two_hours_ago = int(time.time() * 1000) - 2 * 3600 * 1000
    for i in range(50):
        producer.produce(old, b"old-%d" % i, partition=0, timestamp=two_hours_ago + i)
        producer.produce(fresh, b"fresh-%d" % i, partition=0)
    assert producer.flush(30) == 0
    # Set after the old records were written, as on a source topic tightened later: the config
    # sync carries it to the remote topic, which then refuses the old records.
    window = "message.timestamp.before.max.ms"
    _set_config(primary, old, window, "3600000")
    _create(backup, f"primary.{old}", 1, **{window: "3600000"})
    port = free_port()
    props = write_properties(
        tmp_path,
        primary.bootstrap_servers,
        backup.bootstrap_servers,
        f"{old},{fresh}",
        f"listeners = http://127.0.0.1:{port}\ntasks.max = 1\n",
    )
    api = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30)

    def source_tasks() -> list[dict[str, Any]]:
        try:
            answer = api.get(f"/connectors/{SOURCE}/status")
        except httpx.HTTPError:
            return []
        return list(answer.json().get("tasks", [])) if answer.status_code == 200 else []

    try:
        with MirrorProcess(props) as mirror:
            eventually(
                lambda: any(t.get("state") == "FAILED" for t in source_tasks()),
                timeout=180,
                what="the copy task FAILED",
                log=mirror.log,
            )
            trace = " ".join(str(t.get("trace", "")) for t in source_tasks())
            assert f"{old}-0@0" in trace, trace
            assert "timestamp" in trace.lower() and window in trace, trace
            flow = api.get("/flows/primary/backup").json()
            assert flow["state"] in ("DEGRADED", "FAILED"), flow
            # Failed, not looping: no more aborted copies pile up on the remote topic.
            ends = _log_end(backup, f"primary.{old}")
            time.sleep(5)
            assert _log_end(backup, f"primary.{old}") == ends
            assert mirror.stop() == 0
    finally:
        api.close()
    refused = read_topic(
        backup.bootstrap_servers, f"primary.{old}", **{"isolation.level": "read_committed"}
    )
    assert not any(refused.values()), "a refused record was committed"
