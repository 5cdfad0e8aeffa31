"""Mirroring between Kafka versions: 4.4 into 3.9 (KRaft, the last 3.x) and 3.9 into 4.4.

The 3.9 brokers are Apache Kafka 3.9.1's own jars (resolved from Maven Central, as the 4.4 ones
are), so what differs from 4.x is real: transaction v1 only (no KIP-890 part 2), classic
consumer groups only. For each pair one mirror copies a keyed topic with a config of its own;
then each of what a flow does is checked on the target: records byte for byte once
(read_committed), the topic config, heartbeats and checkpoints, a consumer group's offsets
synced, the flow RUNNING in REST, and at the end a failover of the group after which its
consumer on the target reads every remaining record once.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as KTP
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._config import ConfigResource

from mm2.client.failover import apply_failover, plan_failover, target_group_admin
from mm2.config import load
from mm2.localcluster import LocalCluster, LocalClusters
from tests.support import kafka
from tests.support.kafka import admin_client, commit_group, count, read_topic
from tests.support.mirror import MirrorProcess, caught_up, free_port, write_properties
from tests.support.waiting import eventually

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

PARTITIONS = 2
RECORDS = 600  # per partition


@pytest.fixture(
    # make test runs the two pairs most teams need (into Kafka 4 from a ZooKeeper-era cluster,
    # and back into 3.9); `make versions` runs them all, the oldest sources included.
    params=[
        ("4.4.0", "3.9.1"),
        pytest.param(("3.9.1", "4.4.0"), marks=pytest.mark.matrix),
        ("2.8.2", "4.4.0"),
        pytest.param(("4.4.0", "2.8.2"), marks=pytest.mark.matrix),
        pytest.param(("2.0.1", "4.4.0"), marks=pytest.mark.matrix),
        pytest.param(("0.11.0.3", "4.4.0"), marks=pytest.mark.matrix),
    ],
    ids=lambda v: f"{v[0]}->{v[1]}",
)
def clusters(request: pytest.FixtureRequest) -> Iterator[LocalClusters]:
    source, target = request.param
    pair = LocalClusters.of(
        [LocalCluster("source", kafka_version=source), LocalCluster("target", kafka_version=target)]
    )
    with pair:
        yield pair


def produce(cluster: LocalCluster, topic: str, start: int, n: int) -> None:
    records = (
        (p, f"k{i}".encode(), f"{p}:{i}".encode())
        for p in range(PARTITIONS)
        for i in range(start, start + n)
    )
    kafka.produce(cluster.bootstrap_servers, topic, records, config={"linger.ms": 5})


def remote_config(admin: AdminClient, topic: str, name: str) -> str | None:
    resource = ConfigResource("topic", topic)
    entry = admin.describe_configs([resource])[resource].result(30).get(name)
    return None if entry is None else entry.value


def group_offsets(cluster: LocalCluster, group: str, topic: str) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group})
    try:
        wanted = [KTP(topic, p) for p in range(PARTITIONS)]
        return {tp.partition: tp.offset for tp in consumer.committed(wanted, timeout=30)}
    finally:
        consumer.close()


def read_as_group(cluster: LocalCluster, group: str, topic: str) -> list[bytes]:
    """A member of `group` on `topic` from the group's commits to the end of each partition."""
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": group,
            "auto.offset.reset": "latest",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
        }
    )
    try:
        consumer.assign([KTP(topic, p) for p in range(PARTITIONS)])
        consumer.assign(consumer.committed([KTP(topic, p) for p in range(PARTITIONS)], timeout=30))
        highs = {
            p: consumer.get_watermark_offsets(KTP(topic, p), timeout=30)[1]
            for p in range(PARTITIONS)
        }
        values: list[bytes] = []

        def at_end() -> bool:
            values.extend(m.value() or b"" for m in consumer.consume(500, 0.5) if not m.error())
            positions = consumer.position([KTP(topic, p) for p in range(PARTITIONS)])
            # a transaction marker sits at the end of each partition: the position passes it
            return all(tp.offset >= highs[tp.partition] - 1 for tp in positions)

        eventually(at_end, timeout=90, what=f"{group} reading {topic} to its end")
        return values
    finally:
        consumer.close()


def test_a_flow_between_versions_mirrors_syncs_and_fails_over(
    clusters: LocalClusters, tmp_path: Path
) -> None:
    source, target = clusters["source"], clusters["target"]
    topic = kafka.create_topic(
        source,
        f"ver-{uuid.uuid4().hex[:8]}",
        partitions=PARTITIONS,
        config={"retention.ms": "987654321"},
    )
    remote = f"primary.{topic}"
    produce(source, topic, 0, RECORDS)
    group = f"ver-group-{uuid.uuid4().hex[:8]}"
    commit_group(source.bootstrap_servers, group, {(topic, 0): 100, (topic, 1): 250})
    port = free_port()
    props = write_properties(
        tmp_path,
        source.bootstrap_servers,
        target.bootstrap_servers,
        topic,
        f"listeners = http://127.0.0.1:{port}\n"
        "groups = ver-group-.*\n"
        "sync.group.offsets.enabled = true\n"
        "sync.group.offsets.interval.seconds = 1\n"
        "emit.checkpoints.interval.seconds = 1\n",
    )
    with MirrorProcess(props) as mirror:
        eventually(
            lambda: caught_up(source, target, topic), timeout=240, what=remote, log=mirror.log
        )
        target_admin = admin_client(target.client_config())
        eventually(
            lambda: remote_config(target_admin, remote, "retention.ms") == "987654321",
            timeout=120,
            what="the topic config on the target",
            log=mirror.log,
        )
        eventually(
            lambda: (
                count(target.bootstrap_servers, "heartbeats") > 0
                and count(target.bootstrap_servers, "primary.checkpoints.internal") > 0
            ),
            timeout=120,
            what="heartbeats and checkpoints on the target",
            log=mirror.log,
        )
        eventually(
            lambda: group_offsets(target, group, remote) == {0: 100, 1: 250},
            timeout=120,
            what="the group's offsets synced to the target",
            log=mirror.log,
        )
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as api:
            flow = api.get("/flows/primary/backup").json()
        assert flow["state"] == "RUNNING", flow
        assert mirror.stop() == 0, mirror.log()[-3000:]

    upstream = read_topic(source.bootstrap_servers, topic)
    downstream = read_topic(
        target.bootstrap_servers, remote, **{"isolation.level": "read_committed"}
    )
    for p in range(PARTITIONS):
        assert [r[1:3] for r in downstream[p]] == [r[1:3] for r in upstream[p]], f"partition {p}"

    # The group moves to the target: its consumer there reads every record after its commits,
    # once (the synced offsets are already exact; the plan says so and applies them again).
    commit_group(source.bootstrap_servers, group, {(topic, 0): 300, (topic, 1): 450})
    flow_config = load(str(props)).flow("primary", "backup")
    plan = plan_failover(flow_config, group)
    assert all(m.exact and m.rereads_at_most == 0 for m in plan.moves), plan
    apply_failover(plan, target_group_admin(flow_config))
    got = read_as_group(target, group, remote)
    expected = [f"{p}:{i}".encode() for p, c in ((0, 300), (1, 450)) for i in range(c, RECORDS)]
    assert sorted(got) == sorted(expected) and len(got) == len(expected)
