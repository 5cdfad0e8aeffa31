"""`mm2 translate-offsets` and `mm2 failover` as users run them, against the test clusters.

The offset syncs are written by hand in Apache's layout with our proof header, under fresh
cluster aliases (both names point at the session's brokers), so the test needs no mirror.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as KTP
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from mm2.offset_syncs.exact_index import PREV_SYNC_HEADER, RUN, PrevSync, encode_prev_sync
from mm2.records import OffsetSync
from tests.support.kafka import Cluster

pytestmark = [pytest.mark.e2e, pytest.mark.integration]

MM2 = Path(sys.executable).parent / "mm2"


def mm2(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONFAULTHANDLER": "1"}
    return subprocess.run(
        [str(MM2), *args], capture_output=True, text=True, timeout=120, check=False, env=env
    )


def make_topic(cluster: Cluster, name: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(30)


def committed(cluster: Cluster, group: str, topic: str, partitions: int) -> list[int]:
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group})
    try:
        tps = consumer.committed([KTP(topic, p) for p in range(partitions)], timeout=10)
        return [tp.offset for tp in tps]
    finally:
        consumer.close()


def test_failover_dry_run_then_for_real_and_translate_offsets_json(
    primary: Cluster, backup: Cluster, tmp_path: Path
) -> None:
    tag = uuid.uuid4().hex[:8]
    a, b = f"p{tag}", f"b{tag}"
    topic, group = f"orders-{tag}", f"cli-{tag}"
    remote = f"{a}.{topic}"
    make_topic(primary, topic, 2)
    make_topic(backup, remote, 2)
    props = tmp_path / "mm2.properties"
    props.write_text(
        f"clusters = {a}, {b}\n{a}.bootstrap.servers = {primary.bootstrap_servers}\n"
        f"{b}.bootstrap.servers = {backup.bootstrap_servers}\n{a}->{b}.enabled = true\n",
        encoding="utf-8",
    )
    producer = Producer({"bootstrap.servers": primary.bootstrap_servers})
    for i in range(100):
        producer.produce(topic, f"r{i}".encode(), partition=0)
    syncs_topic = f"mm2-offset-syncs.{b}.internal"
    make_topic(primary, syncs_topic, 1)
    for sync, prev in (
        (OffsetSync(topic, 0, 0, 0), None),
        (OffsetSync(topic, 0, 99, 99), PrevSync(0, 0, RUN)),
    ):
        headers: list[tuple[str, str | bytes | None]] = (
            [] if prev is None else [(PREV_SYNC_HEADER, encode_prev_sync(prev))]
        )
        producer.produce(syncs_topic, sync.to_value_bytes(), sync.to_key_bytes(), headers=headers)
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": primary.bootstrap_servers, "group.id": group})
    consumer.commit(offsets=[KTP(topic, 0, 40), KTP(topic, 1, 0)], asynchronous=False)
    consumer.close()

    common = ["--config", str(props), "--group", group]
    shown = mm2("translate-offsets", *common, "--source", a, "--target", b, "--json")
    assert shown.returncode == 0, shown.stderr
    doc = json.loads(shown.stdout)
    by_partition = {p["source_partition"]: p for p in doc["partitions"]}
    assert by_partition[0]["target_topic"] == remote
    assert (by_partition[0]["target_offset"], by_partition[0]["exact"]) == (40, True)
    assert by_partition[1]["target_offset"] is None  # nothing mirrored there: not guessed
    assert "has not mirrored this partition" in by_partition[1]["note"]

    dry = mm2("failover", *common, "--from", a, "--to", b, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert f"failover of group '{group}': {a} -> {b} (from offset syncs)" in dry.stdout
    assert f"{remote}-0" in dry.stdout and "dry run: nothing committed" in dry.stdout
    assert committed(backup, group, remote, 2) == [-1001, -1001]

    real = mm2("failover", *common, "--from", a, "--to", b)
    assert real.returncode == 0, real.stderr
    assert f"committed 1 partition(s) for group '{group}' on '{b}'" in real.stdout
    assert committed(backup, group, remote, 2) == [40, -1001]


def test_unreachable_cluster_is_named_with_its_servers(tmp_path: Path) -> None:
    props = tmp_path / "mm2.properties"
    props.write_text(
        "clusters = gone, backup\ngone.bootstrap.servers = 127.0.0.1:1\n"
        "backup.bootstrap.servers = 127.0.0.1:2\ngone->backup.enabled = true\n",
        encoding="utf-8",
    )
    result = mm2(
        "failover",
        "--config",
        str(props),
        "--group",
        "g",
        "--from",
        "gone",
        "--to",
        "backup",
        "--dry-run",
        "--timeout",
        "2",
    )
    assert result.returncode == 2
    assert "mm2 failover: error: cluster 'backup' (127.0.0.1:2) did not answer" in result.stderr
