"""`kafka-mirror-maker` with a MirrorMaker 1 user's command line and client files, on real
brokers: topics keep their names, records arrive, and the consumer group of consumer.config
follows the mirror on the source as `kafka-consumer-groups.sh --describe` shows it."""

from __future__ import annotations

import signal
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import (
    Consumer,
    ConsumerGroupTopicPartitions,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from tests.support import kafka
from tests.support.kafka import Cluster
from tests.support.waiting import eventually, file_text

pytestmark = pytest.mark.integration

SCRIPT = Path(sys.executable).parent / "kafka-mirror-maker"
DEADLINE_S = 300.0  # a shared two-core machine: Spark and the first epoch may take a while


def produce(bootstrap: str, topic: str, partitions: int, start: int, n: int) -> None:
    records = (
        (i % partitions, f"k{i}".encode(), f"value-{i}".encode()) for i in range(start, start + n)
    )
    kafka.produce(bootstrap, topic, records, flush_timeout=30)


def values(bootstrap: str, topic: str) -> dict[int, list[bytes | None]]:
    """Every value of every partition of `topic`, up to its high watermark."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    metadata = admin.list_topics(topic, timeout=10).topics.get(topic)
    if metadata is None or metadata.error is not None:
        return {}
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
        }
    )
    try:
        out: dict[int, list[bytes | None]] = {}
        for p in metadata.partitions:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
            out[p] = []
            if high <= low:
                continue
            consumer.assign([TopicPartition(topic, p, low)])
            while True:  # transaction markers take offsets too: up to the last record
                message = consumer.poll(2)
                if message is None:
                    break
                if message.error() is None:
                    out[p].append(message.value())
                    offset = message.offset()
                    assert offset is not None  # a record read has one
                    if offset >= high - 1:
                        break
        return out
    finally:
        consumer.close()


def arrived(cluster: Cluster, topic: str, want: dict[int, list[bytes]]) -> Callable[[], bool]:
    return lambda: values(cluster.bootstrap_servers, topic) == want


def ends(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "ends"})
    try:
        return {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
            for p in range(partitions)
        }
    finally:
        consumer.close()


def commit_group(admin: AdminClient, group: str, tp: TopicPartition, log: Path) -> None:
    """Commit as MirrorMaker 1 did; a coordinator still loading answers per partition."""

    def done() -> bool:
        request = ConsumerGroupTopicPartitions(group, [tp])
        result = admin.alter_consumer_group_offsets([request])[group].result(30)
        return all(p.error is None for p in result.topic_partitions)

    eventually(
        done,
        timeout=DEADLINE_S,
        what=f"a commit of {tp} for {group}",
        interval=0.5,
        log=file_text(log),
    )


def group_offsets(bootstrap: str, group: str) -> dict[tuple[str, int], int]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    future = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group]
    result = future.result(timeout=30)
    return {(tp.topic, tp.partition): tp.offset for tp in result.topic_partitions if tp.offset >= 0}


@pytest.mark.timeout(DEADLINE_S * 3)
def test_mirror_maker_1_command_line_mirrors_and_commits_the_group(
    primary: Cluster, backup: Cluster, tmp_path: Path
) -> None:
    prefix = f"mm1-{uuid.uuid4().hex[:10]}"
    orders, payments, other = f"{prefix}-orders", f"{prefix}-payments", f"{prefix}-other"
    admin = AdminClient({"bootstrap.servers": primary.bootstrap_servers})
    created = admin.create_topics([NewTopic(t, 3, 1) for t in (orders, payments, other)])
    for future in created.values():
        future.result(60)
    group = f"mirrorgroup-{uuid.uuid4().hex[:8]}"
    # Where MirrorMaker 1 had got to under this group: orders-0 is resumed from offset 4.
    produce(primary.bootstrap_servers, orders, 3, 0, 30)
    produce(primary.bootstrap_servers, payments, 3, 0, 30)
    produce(primary.bootstrap_servers, other, 3, 0, 9)
    commit_group(admin, group, TopicPartition(orders, 0, 4), tmp_path / "none.log")

    # Seed 002's files, pointed at the test clusters.
    (tmp_path / "c.properties").write_text(
        f"bootstrap.servers={primary.bootstrap_servers}\ngroup.id={group}\n"
        "auto.offset.reset=earliest\nheartbeat.interval.ms=30000\nsession.timeout.ms=100000\n"
        "partition.assignment.strategy=org.apache.kafka.clients.consumer.RoundRobinAssignor\n"
        "max.poll.records=20000\nreceive.buffer.bytes=4194304\n"
        "max.partition.fetch.bytes=10485760\nenable.auto.commit=false\n",
        encoding="utf-8",
    )
    (tmp_path / "p.properties").write_text(
        f"bootstrap.servers={backup.bootstrap_servers}\ncompression.type=snappy\n"
        "max.in.flight.requests.per.connection=1\nretries=Integer.MAX_VALUE\n"
        "max.block.ms=Long.MAX_VALUE\n",
        encoding="utf-8",
    )
    assert SCRIPT.exists(), f"console script not installed at {SCRIPT}"
    log = tmp_path / "mirror.log"
    with log.open("wb") as out:
        mirror = subprocess.Popen(
            [
                str(SCRIPT),
                "--consumer.config",
                "c.properties",
                "--producer.config",
                "p.properties",
                "--whitelist",
                f"{orders}, {payments}",
                "--num.streams",
                "2",
                "--abort.on.send.fail",
                "true",
                "--offset.commit.interval.ms",
                "1000",
                "--set",
                "listeners=http://127.0.0.1:0",
            ],
            cwd=tmp_path,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        expected = {
            orders: {p: [f"value-{i}".encode() for i in range(30) if i % 3 == p] for p in range(3)}
        }
        expected[orders][0] = expected[orders][0][4:]  # resumed where the group was
        expected[payments] = {
            p: [f"value-{i}".encode() for i in range(30) if i % 3 == p] for p in range(3)
        }
        for topic, want in expected.items():
            eventually(
                arrived(backup, topic, want),
                timeout=DEADLINE_S,
                what=f"{topic} on the backup under its name",
                interval=0.5,
                log=file_text(log),
            )
        # records written while it runs arrive too, and the group follows to the log end
        produce(primary.bootstrap_servers, orders, 3, 30, 30)
        eventually(
            lambda: sum(map(len, values(backup.bootstrap_servers, orders).values())) == 60 - 4,
            timeout=DEADLINE_S,
            what="the records written while mirroring",
            interval=0.5,
            log=file_text(log),
        )
        wanted = {
            (t, p): end
            for t in (orders, payments)
            for p, end in ends(primary.bootstrap_servers, t, 3).items()
        }
        eventually(
            lambda: group_offsets(primary.bootstrap_servers, group) == wanted,
            timeout=DEADLINE_S,
            what=f"group {group}'s offsets on the source at the log end {wanted}",
            interval=0.5,
            log=file_text(log),
        )
    finally:
        if mirror.poll() is None:
            mirror.send_signal(signal.SIGTERM)
        code = mirror.wait(120)
    assert code == 0, log.read_text(errors="replace")[-4000:]
    # Not mirrored: the topic outside the whitelist; not written: checkpoints, offset syncs.
    backup_topics = AdminClient({"bootstrap.servers": backup.bootstrap_servers}).list_topics(
        timeout=10
    )
    primary_topics = admin.list_topics(timeout=10)
    assert other not in backup_topics.topics
    assert not [t for t in backup_topics.topics if t.startswith(group) and "checkpoints" in t]
    assert not [t for t in primary_topics.topics if t.startswith("mm2-offset-syncs." + group)]
    written = (tmp_path / "mm2-state" / group / "kafka-mirror-maker.properties").read_text()
    assert "replication.policy.class = org.apache.kafka.connect.mirror.Identity" in written
