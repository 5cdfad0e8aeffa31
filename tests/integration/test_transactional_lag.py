"""Lag on an idle transactional source topic reaches 0: the positions move past the
commit markers and the aborted records a read_committed consumer never hands over.

Measured before: lag stayed at 53 (1 and 52 on two partitions: the last marker, and an aborted
transaction's records with its marker) while nothing was left to copy.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import Producer

from tests.support.kafka import Cluster, content, create_topic, read_topic
from tests.support.mirror import MirrorProcess, free_port, write_properties
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration


def _transactions(cluster: Cluster, topic: str) -> None:
    """Committed, aborted, committed, aborted: partition 0 ends on a commit marker, partition 1
    on an aborted transaction's records and marker."""
    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "transactional.id": f"lag-{uuid.uuid4().hex[:8]}",
        }
    )
    producer.init_transactions(30)
    for round_, commit in enumerate((True, False, True)):
        producer.begin_transaction()
        for i in range(25):
            producer.produce(
                topic, b"%d-%d-%s" % (round_, i, b"c" if commit else b"a"), partition=i % 2
            )
        if commit:
            producer.commit_transaction(30)
        else:
            assert producer.flush(30) == 0  # on the log before the abort (else purged unsent)
            producer.abort_transaction(30)
    producer.begin_transaction()  # the last one: aborted, on partition 1 only
    for i in range(26):
        producer.produce(topic, b"tail-%d" % i, partition=1)
    assert producer.flush(30) == 0
    producer.abort_transaction(30)


def test_an_idle_transactional_topic_reaches_lag_0(
    primary: Cluster, backup: Cluster, tmp_path: Path
) -> None:
    topic = f"txn-{uuid.uuid4().hex[:8]}"
    create_topic(primary, topic, partitions=2)
    _transactions(primary, topic)
    port = free_port()
    props = write_properties(
        tmp_path,
        primary.bootstrap_servers,
        backup.bootstrap_servers,
        topic,
        f"listeners = http://127.0.0.1:{port}\n",
    )
    api = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30)

    def rows() -> list[dict[str, Any]]:
        try:
            answer = api.get("/flows/primary/backup/partitions")
        except httpx.HTTPError:
            return []
        if answer.status_code != 200:
            return []
        return [r for r in answer.json() if r["topic"] == topic]

    try:
        with MirrorProcess(props) as mirror:
            eventually(
                lambda: len(rows()) == 2 and all(r["lag_records"] == 0 for r in rows()),
                timeout=120,
                what=f"lag 0 on both partitions of {topic}",
                log=lambda: f"{rows()}\n{mirror.log()}",
            )
            assert all(r["position"] == r["log_end"] for r in rows()), rows()
            assert mirror.stop() == 0
    finally:
        api.close()
    source = read_topic(primary.bootstrap_servers, topic, **{"isolation.level": "read_committed"})
    target = read_topic(
        backup.bootstrap_servers, f"primary.{topic}", **{"isolation.level": "read_committed"}
    )
    for p in (0, 1):  # every committed record once, in order; no aborted one
        assert content(target.get(p, [])) == content(source.get(p, [])), f"partition {p}"
