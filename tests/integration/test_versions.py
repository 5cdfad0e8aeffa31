"""Mirroring between Kafka versions: into 4.4 from 3.9, 2.8, 2.0 and 0.11; from 4.4 into 3.9, 2.8.

Every broker runs its version's own jars (resolved from Maven Central, as the 4.4 ones are;
before 3.0 with a ZooKeeper node of its own), so what differs from 4.x is real: older
transactions (no KIP-890 part 2), classic consumer groups only. For each pair one mirror copies
a keyed topic with a config of its own; then each of what a flow does is checked on the target:
records byte for byte once (read_committed), the topic config, the topic's ACL (each broker runs
its version's own authorizer), heartbeats and checkpoints, a consumer group's offsets synced,
the flow RUNNING in REST and in `mm2 status`, and at the end a failover of the group (`mm2
failover`) after which its consumer on the target reads every remaining record once.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as KTP
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._config import ConfigResource

from mm2.kafka.acls import AclBinding, from_kafka, to_kafka, topic_acl_filter
from mm2.kafka.take import take
from mm2.localcluster import LocalCluster, LocalClusters
from tests.support import kafka
from tests.support.kafka import admin_client, commit_group, count, read_topic
from tests.support.mirror import MirrorProcess, caught_up, free_port, mm2_json, write_properties
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
        [
            LocalCluster("source", kafka_version=source, broker_config=with_acls(source)),
            LocalCluster("target", kafka_version=target, broker_config=with_acls(target)),
        ]
    )
    with pair:
        yield pair


def with_acls(version: str) -> dict[str, str]:
    """The version's own authorizer, with every client a super user: ACLs are kept and
    described, nothing is refused."""
    major, minor = (int(part) for part in version.split(".")[:2])
    if major >= 3:
        authorizer = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"  # KRaft
    elif (major, minor) >= (2, 4):
        authorizer = "kafka.security.authorizer.AclAuthorizer"
    else:
        authorizer = "kafka.security.auth.SimpleAclAuthorizer"
    return {"authorizer.class.name": authorizer, "super.users": "User:ANONYMOUS"}


def reader_acl(topic: str) -> AclBinding:
    return AclBinding("TOPIC", topic, "LITERAL", "User:alice", "*", "READ", "ALLOW")


def topic_acls(admin: AdminClient) -> list[AclBinding]:
    return [from_kafka(b) for b in admin.describe_acls(topic_acl_filter()).result(timeout=30)]


def status(*args: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = mm2_json("status", *args)["partitions"]
    return rows


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
            values.extend(m.value() or b"" for m in take(consumer, 500, 0.5) if not m.error())
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
    source_admin = admin_client(source.client_config())
    for outcome in source_admin.create_acls([to_kafka(reader_acl(topic))]).values():
        outcome.result(timeout=30)
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
            lambda: reader_acl(remote) in topic_acls(target_admin),
            timeout=120,
            what="the topic's ACL on the target",
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
        # `mm2 status`, from the running mirror and from the clusters themselves.
        eventually(
            lambda: all(
                r["state"] == "RUNNING" and r["lag_records"] == 0
                for r in status("--url", f"http://127.0.0.1:{port}")
                if r["topic"] == topic
            ),
            timeout=60,
            what="mm2 status --url: the topic RUNNING without lag",
            log=mirror.log,
        )
        by_file = {r["partition"]: r for r in status(str(props)) if r["topic"] == topic}
        assert sorted(by_file) == list(range(PARTITIONS)), by_file
        assert all(r["log_end"] == r["position"] == RECORDS for r in by_file.values()), by_file
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
    moved = mm2_json(
        "failover", "--config", str(props), "--group", group, "--from", "primary", "--to", "backup"
    )
    assert all(m["exact"] and m["rereads_at_most"] == 0 for m in moved["partitions"]), moved
    assert {(c["partition"], c["offset"]) for c in moved["applied"]["committed"]} == {
        (0, 300),
        (1, 450),
    }, moved
    got = read_as_group(target, group, remote)
    expected = [f"{p}:{i}".encode() for p, c in ((0, 300), (1, 450)) for i in range(c, RECORDS)]
    assert sorted(got) == sorted(expected) and len(got) == len(expected)
