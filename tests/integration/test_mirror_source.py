"""One-way replication end to end: connect-mirror-maker mirrors primary to backup for real."""

from __future__ import annotations

import logging
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._config import AlterConfigOpType, ConfigEntry, ConfigResource
from confluent_kafka.cimpl import NewPartitions, NewTopic

from mm2.records import Checkpoint, Heartbeat, OffsetSync
from tests.support.kafka import Cluster, content, count, digest, last_values, read_topic
from tests.support.mirror import MirrorProcess, write_properties
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration
log = logging.getLogger(__name__)


def make_topic(cluster: Cluster, name: str, partitions: int, **configs: str) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic(name, partitions, 1, config=configs)])[name].result(30)


def produce_shapes(bootstrap: str, topic: str) -> int:
    """Null keys and values, null and repeated headers, a 1 MB value, gzip batches, and a
    transaction that is aborted between two committed ones. Returns the committed count."""
    plain = Producer(
        {"bootstrap.servers": bootstrap, "compression.type": "gzip", "message.max.bytes": 2_000_000}
    )
    n = 0
    # Recent timestamps: the broker's 7-day retention would delete records stamped years ago.
    base = int(time.time() * 1000) - 60_000
    for i in range(300):
        headers: list[tuple[str, str | bytes | None]] = [
            ("trace", f"t{i}".encode()),
            ("empty", None),
            ("trace", b"again"),
        ]
        key = None if i % 4 == 0 else f"k{i}".encode()
        value = None if i % 5 == 0 else f"value-{i}".encode() * (1 + i % 7)
        plain.produce(topic, value, key, partition=i % 3, timestamp=base + i, headers=headers)
        n += 1
    plain.produce(topic, b"x" * 1_000_000, b"big", partition=0, timestamp=base + 1_000)
    n += 1
    plain.flush(30)
    tx = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"tx-{uuid.uuid4()}"})
    tx.init_transactions(30)
    for commit in (True, False, True):
        tx.begin_transaction()
        for i in range(20):
            tx.produce(topic, f"tx-{commit}-{i}".encode(), partition=i % 3)
        if not commit:
            assert tx.flush(30) == 0  # on the log before the abort (else purged unsent)
        (tx.commit_transaction if commit else tx.abort_transaction)(30)
        n += 20 if commit else 0
    return n


def test_records_of_every_shape_arrive_identical_and_internal_topics_decode(
    primary: Cluster, backup: Cluster, tmp_path: Path
) -> None:
    prefix = f"shapes-{uuid.uuid4().hex[:8]}"
    topic = f"{prefix}-a"
    make_topic(primary, topic, 3)
    base_ms = int(time.time() * 1000) - 600_000
    committed = produce_shapes(primary.bootstrap_servers, topic)
    props = write_properties(
        tmp_path, primary.bootstrap_servers, backup.bootstrap_servers, f"{prefix}-.*"
    )
    remote = f"primary.{topic}"
    with MirrorProcess(props) as mirror:
        started = time.monotonic()
        eventually(
            lambda: count(backup.bootstrap_servers, remote) >= committed,
            timeout=240,
            what=remote,
            log=mirror.log,
        )
        took = time.monotonic() - started
        log.info("backlog of %d records mirrored in %.1f s", committed, took)
        # A topic made while the mirror runs is picked up without a restart.
        late = f"{prefix}-late"
        make_topic(primary, late, 2)
        p = Producer({"bootstrap.servers": primary.bootstrap_servers})
        for i in range(10):
            p.produce(late, f"late-{i}".encode(), partition=i % 2)
        p.flush(10)
        started = time.monotonic()
        eventually(
            lambda: count(backup.bootstrap_servers, f"primary.{late}") >= 10,
            timeout=60,
            what="the late topic",
            log=mirror.log,
        )
        took = time.monotonic() - started
        log.info("topic created after start: first records on the target after %.1f s", took)
        eventually(
            lambda: count(backup.bootstrap_servers, "primary.heartbeats") > 0,
            timeout=60,
            what="primary.heartbeats on backup",
            log=mirror.log,
        )
        assert mirror.stop() == 0, mirror.log()[-3000:]

    source = read_topic(primary.bootstrap_servers, topic)
    target = read_topic(backup.bootstrap_servers, remote)
    assert sorted(target) == [0, 1, 2]  # same partition count
    for partition in source:
        assert content(target[partition]) == content(source[partition]), partition
        assert digest(target[partition]) == digest(source[partition])
    assert sum(len(r) for r in target.values()) == committed  # aborted records not copied
    big = [r for r in target[0] if r[1] == b"big"]
    assert len(big) == 1 and big[0][2] == b"x" * 1_000_000

    # Offset syncs on the source cluster, in Apache's layout, name the upstream topic.
    syncs_topic = "mm2-offset-syncs.backup.internal"
    raw = read_topic(primary.bootstrap_servers, syncs_topic)[0]
    syncs = [OffsetSync.from_record(k or b"", v or b"") for _, k, v, _, _ in raw]
    ours = [s for s in syncs if s.topic == topic]
    assert {s.partition for s in ours} == {0, 1, 2}
    for s in ours:  # every sync points at the same record on both sides
        up = next(r for r in source[s.partition] if r[0] == s.upstream_offset)
        down = next(r for r in target[s.partition] if r[0] == s.downstream_offset)
        assert up[1:] == down[1:]

    # Heartbeats: written on primary by the backup->primary herder, mirrored to backup.
    beats = read_topic(backup.bootstrap_servers, "primary.heartbeats")[0]
    decoded = [Heartbeat.from_record(k or b"", v or b"") for _, k, v, _, _ in beats]
    # The topic is the session's: earlier tests' mirrors wrote heartbeats into it too, some
    # more than ten minutes before this one started. This run's are the recent ones.
    recent = [h for h in decoded if h.timestamp > base_ms]
    assert recent, f"none of {len(decoded)} heartbeats on backup is from this run"
    assert {(h.source_cluster_alias, h.target_cluster_alias) for h in recent} == {
        ("backup", "primary")
    }


def test_kill_9_mid_stream_then_restart_copies_each_record_once(
    primary: Cluster, backup: Cluster, tmp_path: Path
) -> None:
    topic = f"crash-{uuid.uuid4().hex[:8]}"
    make_topic(primary, topic, 4)
    producer = Producer({"bootstrap.servers": primary.bootstrap_servers, "linger.ms": 20})
    total = 0

    def produce(n: int) -> None:
        nonlocal total
        for i in range(total, total + n):
            producer.produce(topic, f"r{i}".encode() * 10, f"k{i}".encode(), partition=i % 4)
        producer.flush(30)
        total += n

    produce(50_000)
    props = write_properties(
        tmp_path,
        primary.bootstrap_servers,
        backup.bootstrap_servers,
        topic,
    )
    remote = f"primary.{topic}"
    first = MirrorProcess(props)
    eventually(
        lambda: count(backup.bootstrap_servers, remote) > 5000,
        timeout=180,
        what="first records",
        log=first.log,
    )
    first.kill9()
    produce(20_000)
    tails = last_values(primary.bootstrap_servers, topic)
    with MirrorProcess(props) as second:
        eventually(
            lambda: last_values(backup.bootstrap_servers, remote) == tails,
            timeout=240,
            what="catch-up",
            log=second.log,
        )
        assert second.stop() == 0
    source = read_topic(primary.bootstrap_servers, topic)
    target = read_topic(backup.bootstrap_servers, remote)
    for p, records in source.items():
        want = content(records)
        # Exactly-once (the default): a read_committed reader sees each record once, in order;
        # what the killed mirror had not committed was aborted when the next one fenced it.
        got = content(target[p])
        missing = set(want) - set(got)
        assert not missing, (
            f"partition {p}: {len(missing)} records lost, e.g. {sorted(missing)[:3]}"
        )
        assert len(got) == len(want), f"partition {p}: {len(got) - len(want)} duplicates"
        assert got == want, f"partition {p}: records reordered"
    log.info("kill -9 and restart: %d records, each once", total)


def test_active_active_never_loops(primary: Cluster, backup: Cluster, tmp_path: Path) -> None:
    tag = uuid.uuid4().hex[:8]
    make_topic(primary, f"aa-{tag}", 1)
    make_topic(backup, f"aa-{tag}", 1)
    for cluster in (primary, backup):
        p = Producer({"bootstrap.servers": cluster.bootstrap_servers})
        for i in range(5):
            p.produce(f"aa-{tag}", f"{cluster.name}-{i}".encode())
        p.flush(10)
    # A consumer group on each side has read 3 of the 5 local records.
    group = f"aa-group-{tag}"
    for cluster in (primary, backup):
        c = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group})
        c.commit(offsets=[KafkaTopicPartition(f"aa-{tag}", 0, 3)], asynchronous=False)
        c.close()
    props = write_properties(
        tmp_path,
        primary.bootstrap_servers,
        backup.bootstrap_servers,
        f"aa-{tag}.*, primary.aa-{tag}.*, backup.aa-{tag}.*",
        "backup->primary.enabled = true\n"
        f"backup->primary.topics = aa-{tag}.*, primary.aa-{tag}.*\n"
        "emit.checkpoints.interval.seconds = 1\nrefresh.groups.interval.seconds = 1\n",
    )
    with MirrorProcess(props) as mirror:
        for cluster in (primary, backup):
            # Checkpoints of each side's group land on the other side, for its remote topic.
            home = other(cluster)
            eventually(
                lambda c=cluster, h=home: (
                    checkpoint_offsets(c, h, group)  # type: ignore[misc]
                    == {(f"{h}.aa-{tag}", 0): 3}
                ),
                timeout=120,
                what=f"checkpoints of {home}'s group on {cluster.name}",
                log=mirror.log,
            )
        eventually(
            lambda: count(backup.bootstrap_servers, f"primary.aa-{tag}") >= 5,
            timeout=120,
            what="primary -> backup",
            log=mirror.log,
        )
        eventually(
            lambda: count(primary.bootstrap_servers, f"backup.aa-{tag}") >= 5,
            timeout=120,
            what="backup -> primary",
            log=mirror.log,
        )
        time.sleep(5)  # a few refresh rounds: time enough to make a loop, if it would
        for cluster in (primary, backup):
            admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
            names = [t for t in admin.list_topics(timeout=10).topics if f"aa-{tag}" in t]
            assert sorted(names) == sorted([f"aa-{tag}", f"{other(cluster)}.aa-{tag}"]), names
        assert mirror.stop() == 0


def checkpoint_offsets(cluster: Cluster, source: str, group: str) -> dict[tuple[str, int], int]:
    """Downstream offsets in `<source>.checkpoints.internal` on `cluster` for `group`."""
    found: dict[tuple[str, int], int] = {}
    for records in read_topic(cluster.bootstrap_servers, f"{source}.checkpoints.internal").values():
        for _, key, value, _, _ in records:
            if key is not None and value is not None:
                cp = Checkpoint.from_record(key, value)
                if cp.group_id == group:
                    found[(cp.topic, cp.partition)] = cp.downstream_offset
    return found


def other(cluster: Cluster) -> str:
    return "backup" if cluster.name == "primary" else "primary"


def remote_config(admin: AdminClient, topic: str, name: str) -> str | None:
    resource = ConfigResource("topic", topic)
    entries = admin.describe_configs([resource])[resource].result(30)
    entry = entries.get(name)
    return None if entry is None else entry.value


def later_partitions(admin: AdminClient, topic: str) -> int:
    meta = admin.list_topics(timeout=10).topics.get(topic)
    return 0 if meta is None or meta.error else len(meta.partitions)


def test_partition_increase_config_change_and_new_topic_reach_target(
    primary: Cluster, backup: Cluster, tmp_path: Path
) -> None:
    topic = f"grow-{uuid.uuid4().hex[:8]}"
    make_topic(primary, topic, 1)
    props = write_properties(
        tmp_path, primary.bootstrap_servers, backup.bootstrap_servers, f"{topic}.*"
    )
    remote = f"primary.{topic}"
    target = AdminClient({"bootstrap.servers": backup.bootstrap_servers})

    def partitions() -> int:
        meta = target.list_topics(timeout=10).topics.get(remote)
        return 0 if meta is None or meta.error else len(meta.partitions)

    with MirrorProcess(props) as mirror:
        eventually(lambda: partitions() == 1, timeout=60, what="remote topic", log=mirror.log)
        source = AdminClient({"bootstrap.servers": primary.bootstrap_servers})
        source.create_partitions([NewPartitions(topic, 3)])[topic].result(30)
        started = time.monotonic()
        eventually(lambda: partitions() == 3, timeout=30, what="new partitions", log=mirror.log)
        took = time.monotonic() - started
        log.info("partition increase reached the target after %.1f s", took)
        p = Producer({"bootstrap.servers": primary.bootstrap_servers})
        p.produce(topic, b"in-new-partition", partition=2)
        p.flush(10)
        eventually(
            lambda: count(backup.bootstrap_servers, remote) >= 1,
            timeout=60,
            what="record",
            log=mirror.log,
        )
        # A topic config changed on the source reaches the target.
        resource = ConfigResource("topic", topic, {"retention.ms": "123456789"})
        source.incremental_alter_configs(
            [
                ConfigResource(
                    "topic",
                    topic,
                    incremental_configs=[
                        ConfigEntry(
                            "retention.ms", "123456789", incremental_operation=AlterConfigOpType.SET
                        )
                    ],
                )
            ]
        )[resource].result(30)
        started = time.monotonic()
        eventually(
            lambda: remote_config(target, remote, "retention.ms") == "123456789",
            timeout=30,
            what="config change",
            log=mirror.log,
        )
        took = time.monotonic() - started
        log.info("topic config change reached the target after %.1f s", took)
        # A topic created while the mirror runs is created on the target and mirrored.
        later = f"{topic}-later"
        make_topic(primary, later, 2)
        started = time.monotonic()
        eventually(
            lambda: later_partitions(target, f"primary.{later}") == 2,
            timeout=30,
            what="new topic",
            log=mirror.log,
        )
        took = time.monotonic() - started
        log.info("a new topic reached the target after %.1f s", took)
        assert mirror.stop() == 0
    mirrored = read_topic(backup.bootstrap_servers, remote)
    assert [r[2] for r in mirrored[2]] == [b"in-new-partition"]
    assert content(mirrored[2]) == content(read_topic(primary.bootstrap_servers, topic)[2])


def test_mirrors_with_separate_executor_jvms(
    primary: Cluster, backup: Cluster, tmp_path: Path
) -> None:
    """spark.master = local-cluster[2,1,1024]: the copy step runs in executor processes."""
    topic = f"cluster-{uuid.uuid4().hex[:8]}"
    make_topic(primary, topic, 4)
    p = Producer({"bootstrap.servers": primary.bootstrap_servers})
    for i in range(2000):
        p.produce(topic, f"v{i}".encode(), f"k{i}".encode(), partition=i % 4)
    p.flush(30)
    props = write_properties(
        tmp_path,
        primary.bootstrap_servers,
        backup.bootstrap_servers,
        topic,
        "spark.master = local-cluster[2,1,1024]\n",
    )
    remote = f"primary.{topic}"
    with MirrorProcess(props) as mirror:
        eventually(
            lambda: count(backup.bootstrap_servers, remote) >= 2000,
            timeout=240,
            what=remote,
            log=mirror.log,
        )
        assert mirror.stop() == 0
    source = read_topic(primary.bootstrap_servers, topic)
    target = read_topic(backup.bootstrap_servers, remote)
    assert {p: content(r) for p, r in target.items()} == {p: content(r) for p, r in source.items()}


def test_oversized_record_fails_the_task_naming_topic_partition_offset(
    primary: Cluster, backup: Cluster, tmp_path: Path
) -> None:
    topic = f"big-{uuid.uuid4().hex[:8]}"
    make_topic(primary, topic, 1)
    # The remote topic exists already, with a lower size limit than the source's records.
    make_topic(backup, f"primary.{topic}", 1, **{"max.message.bytes": "2000"})
    p = Producer({"bootstrap.servers": primary.bootstrap_servers})
    p.produce(topic, b"small", partition=0)
    p.produce(topic, b"x" * 50_000, partition=0)
    p.flush(10)
    # Excluded from config sync, or the source's default would replace the target's limit.
    props = write_properties(
        tmp_path,
        primary.bootstrap_servers,
        backup.bootstrap_servers,
        topic,
        "config.properties.exclude = max\\.message\\.bytes\n",
    )
    with MirrorProcess(props) as mirror:
        eventually(
            lambda: "is larger than" in mirror.log(),
            timeout=120,
            what="the oversized error",
            log=mirror.log,
        )
        assert mirror.stop() == 0
    line = next(ln for ln in mirror.log().splitlines() if "is larger than" in ln)
    assert f"{topic}-0@1" in line, line
    assert "max.message.bytes" in line and "skip.oversized.records" in line, line
    assert count(backup.bootstrap_servers, f"primary.{topic}") == 0  # nothing after the failure

    # With skip.oversized.records the small records still arrive and the big one is counted.
    p.produce(topic, b"after", partition=0)
    p.flush(10)
    with props.open("a") as f:
        f.write("skip.oversized.records = true\n")
    with MirrorProcess(props) as mirror:
        remote = f"primary.{topic}"
        eventually(
            lambda: count(backup.bootstrap_servers, remote) >= 2,
            timeout=120,
            what="small ones",
            log=mirror.log,
        )
        assert mirror.stop() == 0
    values = [r[2] for r in read_topic(backup.bootstrap_servers, remote)[0]]
    assert values == [b"small", b"after"]
    assert "skipped 1 record(s)" in mirror.log()
