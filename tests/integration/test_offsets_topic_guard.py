"""The offsets topic guarded: one that is not compacted is refused, as Kafka Connect
refuses it, with the topic and the fix named, instead of losing positions to retention; and a
partition of it that cannot be read to its end holds back no flow whose keys live elsewhere."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import Producer

from mm2.copy.positions import PositionsTopic
from tests.support.kafka import Cluster, admin_client, count, create_topic
from tests.support.mirror import MirrorProcess, free_port, write_properties
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration


def test_an_offsets_topic_that_is_not_compacted_is_refused_naming_it(
    primary: Cluster, backup: Cluster, tmp_path: Path
) -> None:
    topic = create_topic(primary, f"guard-{uuid.uuid4().hex[:8]}", partitions=1)
    offsets = create_topic(
        backup,
        f"mm2-offsets.{uuid.uuid4().hex[:8]}.internal",
        partitions=5,
        config={"cleanup.policy": "delete"},
    )
    port = free_port()
    props = write_properties(
        tmp_path,
        primary.bootstrap_servers,
        backup.bootstrap_servers,
        topic,
        f"listeners = http://127.0.0.1:{port}\noffset.storage.topic = {offsets}\n",
    )
    api = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30)

    def flow() -> dict[str, Any]:
        try:
            answer = api.get("/flows/primary/backup")
        except httpx.HTTPError:
            return {}
        return dict(answer.json()) if answer.status_code == 200 else {}

    try:
        with MirrorProcess(props) as mirror:
            eventually(
                lambda: flow().get("state") == "FAILED",
                timeout=120,
                what="the flow FAILED on the offsets topic",
                log=lambda: f"{flow()}\n{mirror.log()}",
            )
            cause = str(flow().get("cause"))
            assert offsets in cause and "cleanup.policy" in cause, cause
            assert mirror.stop() == 0
    finally:
        api.close()


def test_a_transaction_left_open_in_a_partition_without_the_flows_keys_holds_nothing_back(
    primary: Cluster, backup: Cluster, tmp_path: Path
) -> None:
    """Another writer's transaction left open in the offsets topic holds its partition's last
    stable offset back: a read_committed reader never reaches that partition's end. The flow
    waits only for the partitions that hold its own keys, so it copies all the same."""
    topic = create_topic(primary, f"stuck-{uuid.uuid4().hex[:8]}", partitions=1)
    offsets = create_topic(
        backup,
        f"mm2-offsets.{uuid.uuid4().hex[:8]}.internal",
        partitions=10,
        config={"cleanup.policy": "compact"},
    )
    positions = PositionsTopic(
        flow="primary->backup",
        topic=offsets,
        connector="MirrorSourceConnector",
        source_alias="primary",
        partitions=10,
        replication_factor=1,
        admin_config={},
        consumer_config={},
        producer_config={},
        source_admin_config={},
    )
    # The flow also copies every heartbeats topic on the source, other tests' included (a
    # backup->primary flow makes backup.heartbeats): none of their keys may be in `stuck`.
    on_primary = admin_client(primary.client_config()).list_topics(timeout=10).topics
    beats = {("heartbeats", 0), ("backup.heartbeats", 0)} | {
        (t, p)
        for t, info in on_primary.items()
        if t.endswith("heartbeats")
        for p in info.partitions
    }
    held = positions.holding([(topic, 0), *beats])(10)
    stuck = min(set(range(10)) - held)
    stray = Producer(
        {
            "bootstrap.servers": backup.bootstrap_servers,
            "transactional.id": f"stray-{uuid.uuid4().hex[:8]}",
            "transaction.timeout.ms": 600_000,
        }
    )
    stray.init_transactions(30)
    stray.begin_transaction()
    stray.produce(offsets, b'{"offset":1}', b'["OtherConnector",{}]', partition=stuck)
    assert stray.flush(30) == 0
    producer = Producer({"bootstrap.servers": primary.bootstrap_servers})
    for i in range(100):
        producer.produce(topic, b"r-%d" % i, partition=0)
    assert producer.flush(30) == 0
    props = write_properties(
        tmp_path,
        primary.bootstrap_servers,
        backup.bootstrap_servers,
        topic,
        f"offset.storage.topic = {offsets}\n",
    )
    try:
        with MirrorProcess(props) as mirror:
            eventually(
                lambda: count(backup.bootstrap_servers, f"primary.{topic}") >= 100,
                timeout=180,
                what=f"copying with partition {stuck} of {offsets} stuck",
                log=mirror.log,
            )
            assert mirror.stop() == 0
    finally:
        stray.abort_transaction(30)
