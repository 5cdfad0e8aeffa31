"""A planned switchover and its failback on real brokers, under load.

A producer writes numbered records to `primary`; a consumer group reads part of them there.
The test stops the producer and runs `mm2 switchover --from primary --to backup
--start-reverse`: the report says nothing was left uncopied, each partition's source end is
what the test wrote, the group resumes on `backup` at the first record it had not read, and the
flow back runs. The producer moves to `backup`, then the test switches back the same way (and
runs the failback twice: the second run changes nothing). Finally every record, read back by
its number on both clusters, is there exactly once for a read_committed reader.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import (
    Consumer,
    ConsumerGroupTopicPartitions,
    IsolationLevel,
    KafkaException,
    TopicPartition,
)
from confluent_kafka.admin._listoffsets import OffsetSpec

from mm2.kafka.take import take
from tests.support.kafka import Cluster, admin_client, create_topic, read_topic
from tests.support.mirror import ContinuousProducer, MirrorProcess, free_port, write_properties
from tests.support.waiting import eventually

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PARTITIONS = 2


def numbered(start: int) -> Callable[[int], bytes]:
    return lambda i: b"seq-%d" % (start + i)


def load(cluster: Cluster, topic: str, start: int) -> ContinuousProducer:
    return ContinuousProducer(
        cluster,
        topic,
        rate=200,
        limit=10**9,
        seconds=3600,
        partitions=PARTITIONS,
        value=numbered(start),
        config={"enable.idempotence": True},
    ).start()


def stop(producer: ContinuousProducer) -> int:
    producer.stop()
    producer.join()
    return producer.sent


def switch(props: Path, url: str, source: str, target: str) -> dict[str, Any]:
    command = [
        sys.executable,
        "-m",
        "mm2.cli.tools",
        "switchover",
        "--config",
        str(props),
        "--from",
        source,
        "--to",
        target,
        "--url",
        url,
        "--start-reverse",
        "--drain-timeout",
        "240",
        "--json",
    ]
    out = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    assert out.returncode == 0, f"{out.stderr[-3000:]}\n{out.stdout[-2000:]}"
    report: dict[str, Any] = json.loads(out.stdout)
    report["progress"] = out.stderr
    return report


def numbers(bootstrap: str, *topics: str) -> list[int]:
    """The sequence numbers in these topics, for a read_committed reader."""
    out = []
    for topic in topics:
        for records in read_topic(
            bootstrap, topic, **{"isolation.level": "read_committed"}
        ).values():
            out += [int(value.split(b"-")[1]) for _, _, value, _, _ in records if value]
    return out


def consume_some(bootstrap: str, group: str, topic: str, n: int) -> dict[int, int]:
    """The group reads about n records and commits; returns the last number read per partition."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    last: dict[int, int] = {}
    read = 0
    deadline = time.monotonic() + 120
    try:
        while read < n and time.monotonic() < deadline:
            for m in take(consumer, 100, 1.0):
                if m.error() is None and m.value():
                    last[m.partition() or 0] = int((m.value() or b"").split(b"-")[1])
                    read += 1
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    assert read >= n, f"the group read {read} of {n}"
    return last


def first_numbers(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    """The first number the group reads per partition, from its committed offsets."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "error",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
        }
    )
    consumer.subscribe([topic])
    first: dict[int, int] = {}
    deadline = time.monotonic() + 120
    try:
        while len(first) < PARTITIONS and time.monotonic() < deadline:
            for m in take(consumer, 100, 1.0):
                assert m.error() is None, m.error()
                first.setdefault(m.partition() or 0, int((m.value() or b"").split(b"-")[1]))
    finally:
        consumer.close()
    return first


def where_it_stands(cluster: Cluster, group: str, topic: str) -> dict[int, tuple[Any, ...]] | str:
    """Per partition: the group's committed offset, the log end, and the last stable offset
    (what a read_committed reader may read up to), for a failure message; or what went wrong."""
    admin = admin_client(cluster.client_config())
    tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    try:
        answer = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group, tps)])
        committed = {tp.partition: tp.offset for tp in answer[group].result(30).topic_partitions}
        ends = {}
        for name, level in (
            ("end", IsolationLevel.READ_UNCOMMITTED),
            ("read_committed end", IsolationLevel.READ_COMMITTED),
        ):
            latest = OffsetSpec.latest()  # type: ignore[no-untyped-call]
            found = admin.list_offsets(
                {tp: latest for tp in tps}, isolation_level=level, request_timeout=30
            )
            ends[name] = {tp.partition: f.result(30).offset for tp, f in found.items()}
    except KafkaException as exc:
        return f"(not known: {exc})"
    return {
        p: (
            "committed",
            committed.get(p),
            "end",
            ends["end"][p],
            "read_committed end",
            ends["read_committed end"][p],
        )
        for p in range(PARTITIONS)
    }


def test_switchover_and_failback_under_load_lose_and_double_nothing(
    primary: Cluster, backup: Cluster, tmp_path: Path
) -> None:
    topic = create_topic(primary, f"sw-{uuid.uuid4().hex[:8]}", partitions=PARTITIONS)
    create_topic(backup, topic, partitions=PARTITIONS)  # where producers write after the switch
    group = f"sw-group-{uuid.uuid4().hex[:8]}"
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    extra = (
        f"backup->primary.enabled = true\nbackup->primary.topics = {topic}\n"
        f"groups = {group}\nlisteners = {url}\n"
        f"offset.storage.topic = mm2-offsets.{uuid.uuid4().hex[:8]}.internal\n"
    )
    props = write_properties(
        tmp_path, primary.bootstrap_servers, backup.bootstrap_servers, topic, extra
    )
    api = httpx.Client(base_url=url, timeout=30)

    def state(source: str, target: str) -> str | None:
        try:
            return str(api.get(f"/flows/{source}/{target}").json()["state"])
        except (httpx.HTTPError, ValueError, KeyError):
            return None

    try:
        with MirrorProcess(props) as mirror:
            eventually(
                lambda: state("primary", "backup") == "RUNNING",
                timeout=240,
                what="primary->backup RUNNING",
                log=mirror.log,
            )
            # The way back waits, as in an active/passive pair.
            assert api.put("/flows/backup/primary/pause").status_code == 202
            eventually(
                lambda: state("backup", "primary") == "PAUSED",
                timeout=120,
                what="backup->primary PAUSED",
                log=mirror.log,
            )

            on_primary = load(primary, topic, 0)
            last_read = consume_some(primary.bootstrap_servers, group, topic, 300)
            # The group read up to the end of the log: let each partition get records it has
            # not read, or the group would (rightly) resume at the end with nothing to read.
            unread = max(last_read.values()) + 2 * PARTITIONS
            eventually(lambda: on_primary.sent > unread, timeout=120, what="records not read")
            first_sent = stop(on_primary)  # the operator stops the producers on primary
            report = switch(props, url, "primary", "backup")
            assert report["done"], report
            assert report["recovery_point"]["records"] == 0, report
            ends = {
                p["partition"]: p["source_end"] for p in report["partitions"] if p["topic"] == topic
            }
            # Record i went to partition i % 2: the ends are what the test wrote.
            assert ends == {p: len(range(p, first_sent, PARTITIONS)) for p in range(PARTITIONS)}
            assert all(
                p["copied_to"] == p["source_end"]
                for p in report["partitions"]
                if p["topic"] == topic
            ), report
            (moved,) = [g for g in report["groups"] if g["group"] == group]
            assert moved["committed"] == PARTITIONS and moved["exact"], moved
            assert state("primary", "backup") == "PAUSED"
            assert state("backup", "primary") not in (None, "PAUSED")
            # The group resumes on backup at the first record it had not read on primary.
            first = first_numbers(backup.bootstrap_servers, group, f"primary.{topic}")
            assert first == {p: n + PARTITIONS for p, n in last_read.items()}, (
                first,
                last_read,
                where_it_stands(backup, group, f"primary.{topic}"),
                moved,
            )

            on_backup = load(backup, topic, first_sent)
            eventually(lambda: on_backup.sent > 1000, timeout=120, what="load on backup")
            second_sent = stop(on_backup)
            back = switch(props, url, "backup", "primary")
            assert back["done"] and back["recovery_point"]["records"] == 0, back
            again = switch(props, url, "backup", "primary")  # run twice: nothing changes
            said = " ".join(line for s in again["steps"] for line in s["said"])
            assert "backup->primary is PAUSED already" in said, again
            assert re.search(r"primary->backup is \w+ already", said), again
            assert state("backup", "primary") == "PAUSED"

            on_primary = load(primary, topic, first_sent + second_sent)
            eventually(lambda: on_primary.sent > 1000, timeout=120, what="load on primary")
            total = first_sent + second_sent + stop(on_primary)
            # Every number once on primary (its own writes and backup's copied back) ...
            eventually(
                lambda: len(numbers(primary.bootstrap_servers, topic, f"backup.{topic}")) >= total,
                timeout=240,
                what="backup's records on primary",
                log=mirror.log,
            )
            got = sorted(numbers(primary.bootstrap_servers, topic, f"backup.{topic}"))
            assert got == list(range(total)), "primary lost or doubled records"
            # ... and on backup (primary's copied, its own writes).
            eventually(
                lambda: len(numbers(backup.bootstrap_servers, f"primary.{topic}", topic)) >= total,
                timeout=240,
                what="primary's records on backup",
                log=mirror.log,
            )
            got = sorted(numbers(backup.bootstrap_servers, f"primary.{topic}", topic))
            assert got == list(range(total)), "backup lost or doubled records"
    finally:
        api.close()
