"""A position the source no longer has: records deleted before they were copied, and a
position beyond the log end (a truncated log, or a position set past it).

Before, the copy task's consumer reset such a partition to its earliest offset without a word.
Now the copy task judges it (mm2.copy.out_of_range) and says so at WARN: below the log start it
copies on from there (mm2_source_records_gone counts what was lost); beyond the log end the
offset where the log was cut is not known and records written since must not be skipped, so it
copies the log again from its start (mm2_source_log_truncations counts it).
"""

from __future__ import annotations

import re
import time
import uuid
from pathlib import Path

import httpx
import pytest
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from mm2.copy.position_record import PARTITIONER, position_record
from tests.support.kafka import Cluster, count, create_topic, produce_numbered, read_topic
from tests.support.mirror import MirrorProcess, free_port, write_properties
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

OFFSETS = "mm2-offsets.primary.internal"


def _metric(url: str, name: str, topic: str) -> float:
    text = httpx.get(f"{url}/metrics", timeout=30).text
    for line in text.splitlines():
        if line.startswith(name + "{") and f'topic="{topic}"' in line:
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def _events(url: str) -> list[str]:
    flow = httpx.get(f"{url}/flows/primary/backup", timeout=30).json()
    return [e["kind"] for e in flow["events"]]


def test_records_deleted_before_they_were_copied_and_a_position_past_the_end_are_said(
    primary: Cluster, backup: Cluster, tmp_path: Path
) -> None:
    topic = f"range-{uuid.uuid4().hex[:8]}"
    remote = f"primary.{topic}"
    create_topic(primary, topic, partitions=1)
    produce_numbered(primary.bootstrap_servers, topic, b"a", 1000)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    props = write_properties(
        tmp_path, primary.bootstrap_servers, backup.bootstrap_servers, topic, f"listeners = {url}\n"
    )
    with MirrorProcess(props) as mirror:
        eventually(
            lambda: count(backup.bootstrap_servers, remote) >= 1000,
            timeout=180,
            what="the first 1,000 records",
            log=mirror.log,
        )
        assert mirror.stop() == 0

    # While the mirror is down: 1,000 more, and the first 500 of them deleted (as retention
    # would) before they are copied.
    produce_numbered(primary.bootstrap_servers, topic, b"b", 1000)
    admin = AdminClient({"bootstrap.servers": primary.bootstrap_servers})
    deleted = admin.delete_records([TopicPartition(topic, 0, 1500)])
    for future in deleted.values():
        future.result(60)
    with MirrorProcess(props) as mirror:
        eventually(
            lambda: count(backup.bootstrap_servers, remote) >= 1500,
            timeout=180,
            what="the 500 records left of the second 1,000",
            log=mirror.log,
        )
        said = rf"{topic}-0: offsets 1000-1499 were deleted from the source .* 500 record\(s\)"
        assert re.search(said, mirror.log()), mirror.log()[-4000:]
        eventually(
            lambda: _metric(url, "mm2_source_records_gone_total", remote) == 500,
            timeout=60,
            what="mm2_source_records_gone at 500",
            log=mirror.log,
        )
        assert _events(url) == ["records-gone"]  # shown in /flows too
        assert mirror.stop() == 0

    # A position past the log end (2,000): as after an unclean leader election truncated it.
    key, value, headers = position_record(
        "MirrorSourceConnector", "primary", topic, 0, 4999, cluster_id=None
    )
    # Keyed as Connect partitions its offsets topic (Java's murmur2), where the mirror reads it.
    producer = Producer({"bootstrap.servers": backup.bootstrap_servers, **PARTITIONER})
    producer.produce(OFFSETS, value, key, headers=headers)
    assert producer.flush(30) == 0
    produce_numbered(
        primary.bootstrap_servers, topic, b"c", 100
    )  # offsets 2000-2099: never to be skipped
    with MirrorProcess(props) as mirror:
        eventually(
            lambda: count(backup.bootstrap_servers, remote) >= 2100,
            timeout=180,
            what="the log again and the 100 records written after the truncation",
            log=mirror.log,
        )
        assert re.search(
            rf"{topic}-0: the position 5000 is beyond the source's log end 2100", mirror.log()
        ), mirror.log()[-4000:]
        eventually(
            lambda: _metric(url, "mm2_source_log_truncations_total", remote) == 1,
            timeout=60,
            what="mm2_source_log_truncations at 1",
            log=mirror.log,
        )
        assert _events(url) == ["log-truncated"]  # a new process: its own events
        time.sleep(3)  # time enough to copy anything twice, if it would
        assert mirror.stop() == 0

    values = [
        r[2]
        for r in read_topic(
            backup.bootstrap_servers, remote, **{"isolation.level": "read_committed"}
        )[0]
    ]
    second = [b"b-%d" % i for i in range(500, 1000)]
    want = [b"a-%d" % i for i in range(1000)] + second + second + [b"c-%d" % i for i in range(100)]
    assert values == want, f"{len(values)} records on the target, {len(want)} expected"
