"""A lost offsets topic is rebuilt from the offset syncs and the remote topics, instead of copying
everything again.

Measured before: after the offsets topic was deleted and the mirror restarted, mm2 created an
empty one, logged "(0 stored)" at INFO and copied again: 18,291 duplicates of 55,799 records.
"""

from __future__ import annotations

import re
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from mm2.copy.rebuild import Anchor, prove_positions
from tests.support.kafka import Cluster, count, create_topic, produce, read_topic
from tests.support.mirror import MirrorProcess, write_properties
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

PARTITIONS = 2


def _records(prefix: str, first: int, n: int) -> list[tuple[int, bytes | None, bytes | None]]:
    return [
        (p, b"k-%d" % i, f"{prefix}-{p}-{i}".encode())
        for i in range(first, first + n)
        for p in range(PARTITIONS)
    ]


def _values(cluster: Cluster, topic: str) -> dict[int, list[tuple[int, bytes | None]]]:
    read = read_topic(cluster.bootstrap_servers, topic, **{"isolation.level": "read_committed"})
    return {p: [(r[0], r[2]) for r in records] for p, records in read.items()}


def _difference(got: list[tuple[int, bytes | None]], expected: list[bytes]) -> str:
    """What a partition read back got wrong, with the target offsets: the first records, the
    missing ones and the ones copied twice (where they sit tells which run wrote them)."""
    values = [v for _, v in got]
    seen: dict[bytes | None, int] = {}
    twice = []
    for offset, value in got:
        if value in seen:
            twice.append((value, seen[value], offset))
        seen[value] = offset
    missing = [v for v in expected if v not in seen]
    return (
        f"{len(values)} records, first {got[:3]}, last {got[-3:]}; {len(missing)} missing "
        f"(first {missing[:3]}, last {missing[-3:]}); {len(twice)} twice (value, first offset, "
        f"second offset: first {twice[:3]}, last {twice[-3:]})"
    )


def test_a_lost_offsets_topic_is_rebuilt_and_nothing_is_copied_twice(
    primary: Cluster, backup: Cluster, tmp_path: Path
) -> None:
    topic = create_topic(primary, f"lost-{uuid.uuid4().hex[:8]}", partitions=PARTITIONS)
    remote = f"primary.{topic}"
    offsets = f"mm2-offsets.{uuid.uuid4().hex[:8]}.internal"
    props = write_properties(
        tmp_path,
        primary.bootstrap_servers,
        backup.bootstrap_servers,
        topic,
        f"offset.storage.topic = {offsets}\n",
    )
    produce(primary.bootstrap_servers, topic, _records("before", 0, 3000))
    with MirrorProcess(props) as mirror:
        eventually(
            lambda: count(backup.bootstrap_servers, remote) >= 6000,
            timeout=180,
            what="the first 6,000 records copied",
            log=mirror.log,
        )
        assert mirror.stop() == 0
    admin = AdminClient({"bootstrap.servers": backup.bootstrap_servers})
    admin.delete_topics([offsets], operation_timeout=30)[offsets].result(60)
    eventually(
        lambda: offsets not in admin.list_topics(timeout=10).topics,
        timeout=60,
        what=f"{offsets} deleted",
    )
    produce(primary.bootstrap_servers, topic, _records("after", 3000, 1000))
    with MirrorProcess(props) as mirror:
        eventually(
            lambda: count(backup.bootstrap_servers, remote) >= 8000,
            timeout=180,
            what="the 2,000 records written while it was stopped",
            log=mirror.log,
        )
        time.sleep(3)  # time enough to copy anything twice, if it would
        assert mirror.stop() == 0
        text = mirror.log()
    assert f"{offsets} was missing on backup and was created again" in text
    # Its 2 partitions and the heartbeats topic's, which every flow mirrors: all proven.
    rebuilt = re.search(
        r"positions of (\d+) partition\(s\) rebuilt exactly.*?(\d+) more resume", text
    )
    assert rebuilt is not None and rebuilt[2] == "0" and int(rebuilt[1]) >= PARTITIONS
    copied = _values(backup, remote)
    for p in range(PARTITIONS):
        expected = [f"before-{p}-{i}".encode() for i in range(3000)]
        expected += [f"after-{p}-{i}".encode() for i in range(3000, 4000)]
        lines = [line for line in text.splitlines() if "offset sync" in line or "rebuil" in line]
        assert [v for _, v in copied[p]] == expected, (
            f"partition {p}: {_difference(copied[p], expected)}; the mirror's log: {lines}"
        )


def _produce_stamped(cluster: Cluster, topic: str, rows: list[tuple[int, int, bytes]]) -> None:
    """(partition, timestamp, value) records, key b"k": copies carry their original's time."""
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    for partition, stamp, value in rows:
        producer.produce(topic, value, b"k", partition=partition, timestamp=stamp)
    assert producer.flush(60) == 0


def test_the_walk_proves_what_matches_and_nothing_past_a_difference(
    primary: Cluster, backup: Cluster
) -> None:
    """prove_positions on real logs: a sync anchors the walk, the records after it are paired,
    and the first pair that differs ends it; a sync whose own records differ proves nothing. A
    walk that paired every copy to the remote partition's end is whole: nothing after it was
    copied, even where the source holds more."""
    source = create_topic(primary, f"walk-{uuid.uuid4().hex[:8]}", partitions=5)
    remote = create_topic(backup, f"primary.{source}", partitions=5)
    t0 = 1_700_000_000_000
    _produce_stamped(
        primary, source, [(p, t0 + i, b"v-%d" % i) for i in range(50) for p in range(5)]
    )
    # Partition 0 holds all 50 copies; partition 1 only the first 30, then a record no copy
    # task wrote; partition 2 starts one record late, so its sync points at different records;
    # partition 3 has the same values at other times; partition 4 only the first 40.
    copies = [(0, t0 + i, b"v-%d" % i) for i in range(50)]
    copies += [(1, t0 + i, b"v-%d" % i) for i in range(30)] + [(1, t0 + 30, b"other")]
    copies += [(2, t0 + i, b"v-%d" % i) for i in range(1, 50)]
    copies += [(3, t0 + 1000 + i, b"v-%d" % i) for i in range(50)]
    copies += [(4, t0 + i, b"v-%d" % i) for i in range(40)]
    _produce_stamped(backup, remote, copies)
    whole: set[tuple[str, int]] = set()
    proven = prove_positions(
        [Anchor((source, p), (remote, p), 10, 10) for p in range(5)],
        {"bootstrap.servers": primary.bootstrap_servers},
        {"bootstrap.servers": backup.bootstrap_servers},
        timeout=60,
        whole=whole,
    )
    assert proven == {(source, 0): 49, (source, 1): 29, (source, 4): 39}
    assert whole == {(source, 0), (source, 4)}
