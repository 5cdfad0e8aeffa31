"""Running copy tasks take new topics without a new epoch (mm2.copy.assignment), on the
session's brokers and, for the whole flow, real Spark."""

from __future__ import annotations

import logging
import re
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.cimpl import NewTopic

from mm2.copy.assignment import AssignmentPublisher
from mm2.copy.spec import Assignment
from mm2.copy.task_offsets import TaskOffsets
from tests.support.kafka import KafkaCluster, admin_client, content, count, read_topic
from tests.support.mirror import ContinuousProducer, MirrorProcess, write_properties
from tests.support.specs import copy_spec
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration
log = logging.getLogger(__name__)


def _topic(cluster: KafkaCluster, name: str, partitions: int) -> str:
    admin = admin_client(cluster.client_config())
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(60)
    return name


def test_a_copy_task_reads_its_additions_past_transactions_and_other_epochs(
    backup: KafkaCluster,
) -> None:
    """A copy task's reader of the offsets topic takes the additions of its own epoch and task,
    across the transactional positions (and their commit markers) that share partition 0."""
    topic = _topic(backup, f"mm2-offsets.t{uuid.uuid4().hex[:8]}.internal", 3)
    publisher = AssignmentPublisher(backup.client_config(), topic, "a->b")
    try:
        publisher.publish("e1", {})
        publisher.publish("e0", {1: [Assignment("old", 0, "a.old")]})  # a zombie planner's
        positions = Producer({**backup.client_config(), "transactional.id": f"t-{uuid.uuid4()}"})
        positions.init_transactions(30)
        positions.begin_transaction()
        positions.produce(topic, b'{"offset":1}', b'["MirrorSourceConnector",{}]', partition=0)
        positions.commit_transaction(30)
        publisher.publish("e1", {1: [Assignment("new", 0, "a.new", -1)]})
        publisher.publish(
            "e1", {1: [Assignment("new", 0, "a.new", -1), Assignment("new", 1, "a.new", 7)]}
        )
        positions.begin_transaction()
        positions.produce(topic, b'{"offset":2}', b'["MirrorSourceConnector",{}]', partition=0)
        positions.commit_transaction(30)  # the partition now ends with a commit marker
    finally:
        publisher.close()
    config = {**backup.client_config()}

    def reader(task: int) -> TaskOffsets:
        spec = copy_spec(
            flow="a->b",
            task=task,
            epoch="e1",
            offsets_topic=topic,
            offsets_consumer=config,
            offsets_admin=config,
        )
        return TaskOffsets(spec)

    mine, other = reader(1), reader(0)
    try:
        assert sorted(mine.catch_up_assignment(30), key=lambda a: a.partition) == [
            Assignment("new", 0, "a.new", -1),
            Assignment("new", 1, "a.new", 7),
        ]
        assert other.catch_up_assignment(30) == []
    finally:
        mine.close()
        other.close()


def test_a_new_topic_joins_the_running_copy_tasks_each_record_once(
    primary: KafkaCluster, backup: KafkaCluster, tmp_path: Path
) -> None:
    base = f"join-{uuid.uuid4().hex[:8]}"
    first = _topic(primary, base, 4)
    props = write_properties(
        tmp_path, primary.bootstrap_servers, backup.bootstrap_servers, f"{base}.*"
    )
    load = ContinuousProducer(primary, first, rate=200, limit=6_000, seconds=60)
    later = [f"{base}-later{i}" for i in range(2)]
    with MirrorProcess(props) as mirror:
        try:
            load.start()
            eventually(
                lambda: count(backup.bootstrap_servers, f"primary.{first}") > 100,
                timeout=180,
                what="the first records",
                log=mirror.log,
            )
            for name in later:
                _topic(primary, name, 3)
            producer = Producer(primary.client_config())
            for name in later:
                for i in range(300):
                    producer.produce(name, f"v{i}".encode(), f"k{i}".encode(), partition=i % 3)
            assert producer.flush(60) == 0
            load.join()
        finally:
            load.stop()

        def arrived() -> bool:
            return all(_same(primary, backup, t) for t in [first, *later])

        eventually(arrived, timeout=240, what="every topic caught up", log=mirror.log)
        text = mirror.log()
        assert mirror.stop() == 0, text[-3000:]
    epochs = re.findall(r"copy epoch \d+ started", text)
    assert len(epochs) == 1, f"the copy tasks were restarted: {epochs}\n{text[-3000:]}"
    assert "new partition(s) given to the running copy tasks" in text, text[-3000:]
    for topic in [first, *later]:
        assert _same(primary, backup, topic), topic


def _same(primary: KafkaCluster, backup: KafkaCluster, topic: str) -> bool:
    """Per partition, read_committed: every source record on the target once, in order."""
    upstream = read_topic(primary.bootstrap_servers, topic)
    downstream = read_topic(
        backup.bootstrap_servers, f"primary.{topic}", **{"isolation.level": "read_committed"}
    )
    return sorted(upstream) == sorted(downstream) and all(
        content(upstream[p]) == content(downstream[p]) for p in upstream
    )
