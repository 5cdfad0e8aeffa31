"""Apache MirrorMaker 2 and mm2 taking turns on one flow (docs/architecture.md, "The offsets
topic"): both keep their source positions in Connect's offsets topic on the target,
`mm2-offsets.<source>.internal`, so whichever mirror starts resumes where the other stopped and
the remote topic holds each source record exactly once.

- `test_apache_*` need Apache MM2 only. They pin what mm2 must reproduce: the key and value
  bytes, the partition Java's default partitioner (and librdkafka's `murmur2_random`) gives each
  key, and where Apache resumes from a position written as mm2 writes it (librdkafka, extra
  headers, in a transaction; from an aborted transaction too).
- `test_handover_*` runs Apache MM2, then `connect-mirror-maker` with the same mm2.properties
  and an empty `mm2.state.dir`, then Apache MM2 again. Its mm2 steps need mm2's positions to
  be in the offsets topic; deselect it with `-k "not handover"` where that has not landed.

Apache MM2's jars are the benchmark's (bench/pom.xml); if Maven cannot resolve them the tests
fail, they are never skipped.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._config import ConfigResource
from confluent_kafka.cimpl import NewTopic

from bench.systems import ONE_REPLICA
from mm2.records.connect_offsets import (
    ConnectOffsetKey,
    MirrorSourcePartition,
    encode_offset_value,
)
from mm2.records.java_partitioner import java_partition
from tests.support.apache_mm2 import (
    CONNECTOR,
    ApacheMirrorMaker,
    cluster_id,
    end_offsets,
    latest_positions,
    offsets_topic,
    position_records,
    produce_numbered,
    read_all,
    topic_partition_count,
    values_by_partition,
    wait_content,
    wait_copied,
)
from tests.support.kafka import Cluster
from tests.support.mirror import MirrorProcess

pytestmark = [pytest.mark.integration, pytest.mark.slow]
log = logging.getLogger(__name__)

SOURCE = "primary"
PARTITIONS = 3
# Connect's offset.storage.partitions default, which mm2 uses too.
OFFSETS_PARTITIONS = 25
# mm2's headers on the positions it writes (Apache writes none and ignores them).
CLUSTER_ID_HEADER = "mm2.source.cluster.id"
STATS_HEADER = "mm2.stats"

# Apache's worker reads exactly.once.source.support only as `<target>.exactly.once.source.support`
# (a top-level key never reaches its worker); mm2 reads that key too. Without it Apache copies
# at least once and reads the offsets topic read_uncommitted, while mm2 copies exactly once
# by its own default: the mix an operator moving from Apache MM2 has.
EXACTLY_ONCE = pytest.mark.parametrize(
    "exactly_once",
    [None, "enabled"],
    ids=["apache-default", "exactly-once"],
)


def flow_properties(
    primary: Cluster, backup: Cluster, topic: str, state_dir: Path, exactly_once: str | None
) -> str:
    """One mm2.properties both mirrors run: the benchmark's kind (one broker, so one replica)."""
    text = f"""\
clusters = primary, backup
primary.bootstrap.servers = {primary.bootstrap_servers}
backup.bootstrap.servers = {backup.bootstrap_servers}
primary->backup.enabled = true
primary->backup.topics = {topic}
backup->primary.enabled = false
tasks.max = 2

{ONE_REPLICA}sync.topic.acls.enabled = false

# mm2 only (Apache ignores both): its REST port, and a state directory that starts empty.
listeners = http://127.0.0.1:0
mm2.state.dir = {state_dir}
mm2.configs.topic = mm2-configs.{uuid.uuid4().hex[:12]}.internal
"""
    if exactly_once is not None:
        text += f"backup.exactly.once.source.support = {exactly_once}\n"
    return text


def make_topic(cluster: Cluster, prefix: str) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:10]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic(name, PARTITIONS, 1)])[name].result(30)
    return name


def source_key(topic: str, partition: int) -> bytes:
    return ConnectOffsetKey(CONNECTOR, MirrorSourcePartition(SOURCE, topic, partition)).to_bytes()


def assert_positions_at_end(backup: Cluster, primary: Cluster, topic: str, when: str) -> None:
    """The offsets topic resumes every partition right after its last source record, and every
    record of these keys is where Java's partitioner puts it, in the key bytes mm2 encodes."""
    ends = end_offsets(primary.bootstrap_servers, topic)
    records = position_records(backup.bootstrap_servers, SOURCE, topic)
    n = topic_partition_count(backup.bootstrap_servers, offsets_topic(SOURCE))
    assert latest_positions(records) == {p: end - 1 for p, end in ends.items()}, when
    for r in records:
        assert r.key == source_key(topic, r.source_partition), (when, r)
        assert r.kafka_partition == java_partition(r.key, n), (when, r)


def write_positions(
    backup: Cluster, topic: str, positions: Mapping[int, int], *, commit: bool
) -> None:
    """Positions as mm2 writes them: librdkafka's murmur2_random, mm2's headers, a transaction."""
    producer = Producer(
        {
            "bootstrap.servers": backup.bootstrap_servers,
            "partitioner": "murmur2_random",
            "transactional.id": f"mm2-test-positions-{uuid.uuid4().hex}",
        }
    )
    producer.init_transactions(30)
    producer.begin_transaction()
    for partition, offset in positions.items():
        producer.produce(
            offsets_topic(SOURCE),
            encode_offset_value(offset),
            source_key(topic, partition),
            headers=[(CLUSTER_ID_HEADER, b"test-cluster-id"), (STATS_HEADER, b"[1,1,0]")],
        )
    if commit:
        producer.commit_transaction(30)
    else:
        producer.flush(30)
        producer.abort_transaction(30)


@EXACTLY_ONCE
def test_apache_resumes_after_the_position_written_in_connect_json(
    primary: Cluster, backup: Cluster, tmp_path: Path, exactly_once: str | None
) -> None:
    topic = make_topic(primary, "apache-positions")
    remote = f"{SOURCE}.{topic}"
    properties = flow_properties(primary, backup, topic, tmp_path / "unused", exactly_once)
    produce_numbered(primary.bootstrap_servers, topic, "a", 3_000, PARTITIONS)

    with ApacheMirrorMaker(properties, tmp_path / "apache-1") as apache:
        apache.wait_started()
        took = wait_copied(
            primary.bootstrap_servers,
            topic,
            backup.bootstrap_servers,
            remote,
            timeout=120,
            log=apache.log_tail,
            alive=apache.alive,
        )
        log.info("Apache MM2 %s copied 3,000 records in %.1f s", apache.version, took)
        apache.stop()

    # What Apache left: Connect JSON that mm2's encoder reproduces byte for byte, the last
    # copied offset, no headers, each key in the partition Java's default partitioner picks.
    admin = AdminClient({"bootstrap.servers": backup.bootstrap_servers})
    resource = ConfigResource("TOPIC", offsets_topic(SOURCE))
    configs = admin.describe_configs([resource])[resource].result(30)
    assert configs["cleanup.policy"].value == "compact"
    assert (
        topic_partition_count(backup.bootstrap_servers, offsets_topic(SOURCE)) == OFFSETS_PARTITIONS
    )
    ends = end_offsets(primary.bootstrap_servers, topic)
    assert_positions_at_end(backup, primary, topic, "after Apache MM2")
    records = position_records(backup.bootstrap_servers, SOURCE, topic)
    for r in records:
        assert not r.headers, r
    # librdkafka's murmur2_random places every key where Apache's producer did.
    scratch = f"partitioner-{uuid.uuid4().hex[:10]}"
    admin.create_topics([NewTopic(scratch, OFFSETS_PARTITIONS, 1)])[scratch].result(30)
    placed: dict[bytes | None, int | None] = {}  # as the delivered messages report them
    producer = Producer(
        {"bootstrap.servers": backup.bootstrap_servers, "partitioner": "murmur2_random"}
    )
    for r in records:
        producer.produce(
            scratch,
            b"x",
            r.key,
            on_delivery=lambda err, msg: placed.__setitem__(msg.key(), msg.partition()),
        )
    assert producer.flush(30) == 0
    assert placed == {r.key: r.kafka_partition for r in records}
    admin.delete_topics([scratch])

    # Positions written as mm2 writes them, moved back: Apache resumes right after the last
    # one and copies those records again. With exactly-once off, Apache reads the offsets topic
    # read_uncommitted, so a position in an ABORTED transaction counts too and the records
    # between the two positions are skipped: mm2 must never leave an aborted position as the
    # newest record of a key where Apache may take over. With exactly-once on it reads
    # read_committed and ignores it.
    committed = {p: end - 1 - 100 for p, end in ends.items()}
    aborted = {p: end - 1 - 40 for p, end in ends.items()}
    write_positions(backup, topic, committed, commit=True)
    write_positions(backup, topic, aborted, commit=False)
    produce_numbered(primary.bootstrap_servers, topic, "b", 600, PARTITIONS)
    resumed = committed if exactly_once == "enabled" else aborted
    source = values_by_partition(read_all(primary.bootstrap_servers, topic))
    before = values_by_partition(read_all(backup.bootstrap_servers, remote))
    expected = {p: before[p] + source[p][resumed[p] + 1 :] for p in source}

    with ApacheMirrorMaker(properties, tmp_path / "apache-2") as apache:
        apache.wait_started()
        wait_content(
            backup.bootstrap_servers,
            remote,
            expected,
            timeout=120,
            log=apache.log_tail,
            alive=apache.alive,
        )
        apache.stop()
    assert_positions_at_end(backup, primary, topic, "after Apache MM2 resumed")


@EXACTLY_ONCE
@pytest.mark.timeout(480)
def test_handover_apache_mm2_apache_copies_each_record_once(
    primary: Cluster, backup: Cluster, tmp_path: Path, exactly_once: str | None
) -> None:
    topic = make_topic(primary, "takeover")
    remote = f"{SOURCE}.{topic}"
    state_dir = tmp_path / "mm2-state"
    properties = flow_properties(primary, backup, topic, state_dir, exactly_once)
    properties_file = tmp_path / "mm2.properties"
    properties_file.write_text(properties, encoding="utf-8")

    # (a) Apache MM2 mirrors a backlog and stops.
    produce_numbered(primary.bootstrap_servers, topic, "a", 50_000, PARTITIONS)
    with ApacheMirrorMaker(properties, tmp_path / "apache-a") as apache:
        apache.wait_started()
        took = wait_copied(
            primary.bootstrap_servers,
            topic,
            backup.bootstrap_servers,
            remote,
            timeout=150,
            log=apache.log_tail,
            alive=apache.alive,
        )
        log.info("(a) Apache MM2 %s copied 50,000 records in %.1f s", apache.version, took)
        apache.stop()
    assert_positions_at_end(backup, primary, topic, "(a) after Apache MM2")

    # (b) mm2 takes over with the same file and nothing on local disk.
    assert not state_dir.exists()
    with MirrorProcess(properties_file) as mm2:
        produce_numbered(primary.bootstrap_servers, topic, "b", 10_000, PARTITIONS)
        took = wait_copied(
            primary.bootstrap_servers,
            topic,
            backup.bootstrap_servers,
            remote,
            timeout=180,
            log=lambda: _tail(mm2.log()),
            alive=lambda: mm2.process.poll() is None,
        )
        log.info("(b) mm2 resumed from Apache's positions: 10,000 records in %.1f s", took)
        code = mm2.stop()
        assert code == 0, _tail(mm2.log())
    assert_positions_at_end(backup, primary, topic, "(b) after mm2")
    ours = [r for r in position_records(backup.bootstrap_servers, SOURCE, topic) if r.headers]
    assert {r.source_partition for r in ours} == set(range(PARTITIONS)), (
        "mm2 wrote no position of its own for some partition"
    )
    primary_id = cluster_id(primary.bootstrap_servers).encode()
    for r in ours:
        assert r.headers.get(CLUSTER_ID_HEADER) == primary_id, r

    # (c) Apache MM2 takes the flow back from mm2's positions.
    with ApacheMirrorMaker(properties, tmp_path / "apache-c") as apache:
        apache.wait_started()
        produce_numbered(primary.bootstrap_servers, topic, "c", 10_000, PARTITIONS)
        took = wait_copied(
            primary.bootstrap_servers,
            topic,
            backup.bootstrap_servers,
            remote,
            timeout=150,
            log=apache.log_tail,
            alive=apache.alive,
        )
        log.info("(c) Apache MM2 resumed from mm2's positions: 10,000 records in %.1f s", took)
        apache.stop()
    assert_positions_at_end(backup, primary, topic, "(c) after Apache MM2 again")


def _tail(text: str, lines: int = 80) -> str:
    kept = [ln for ln in text.splitlines() if not ln.lstrip().startswith("at ")]
    return "\n".join(kept[-lines:])
