"""A transaction that never ends (docs/operations.md), on real brokers: a transactional producer
killed mid-transaction leaves its partitions' last stable offset behind their end. The runbook
(kafka-transactions.sh abort, tests.support.transactions) moves it past the records, and a
mirror whose remote topic is held back so says: DEGRADED with the partition and the offset,
a metric, and RUNNING again once it is aborted."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.kafka import KafkaCluster, create_topic, unique_name
from tests.support.mirror import MirrorProcess, free_port, write_properties
from tests.support.transactions import abort_hanging, stuck_partitions
from tests.support.waiting import eventually

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

# A producer that opens a transaction of 5 records on partition 1 and dies without ending it
# (os._exit: no abort, no close); the transaction times out only after 15 minutes.
_PRODUCER = """
import os, sys
from confluent_kafka import Producer
p = Producer({"bootstrap.servers": sys.argv[1], "transactional.id": sys.argv[3],
              "transaction.timeout.ms": 900000})
p.init_transactions(30)
p.begin_transaction()
for i in range(5):
    p.produce(sys.argv[2], value=b"x", partition=1)
p.flush(30)
os._exit(0)
"""


def leave_open(cluster: KafkaCluster, topic: str) -> None:
    subprocess.run(
        [sys.executable, "-c", _PRODUCER, cluster.bootstrap_servers, topic, unique_name("txn")],
        check=True,
        timeout=120,
    )


def test_a_transaction_left_open_is_found_and_aborted(primary: KafkaCluster) -> None:
    topic = create_topic(primary, unique_name("hanging"), partitions=2)
    leave_open(primary, topic)
    stuck = {
        tp: start for tp, start in stuck_partitions(primary, watch_s=2).items() if tp[0] == topic
    }
    assert stuck == {(topic, 1): 0}, stuck

    aborted = abort_hanging(primary)
    assert aborted.get((topic, 1)) == 0, aborted
    eventually(
        lambda: (topic, 1) not in stuck_partitions(primary, watch_s=0),
        timeout=60,
        what="the last stable offset past the aborted transaction",
    )


def test_a_remote_partition_held_back_is_shown_and_heals_once_aborted(
    primary: KafkaCluster, backup: KafkaCluster, tmp_path: Path
) -> None:
    topic = create_topic(primary, unique_name("held"), partitions=2)
    remote = f"primary.{topic}"
    port = free_port()
    props = write_properties(
        tmp_path,
        primary.bootstrap_servers,
        backup.bootstrap_servers,
        topic,
        f"listeners = http://127.0.0.1:{port}\n",
    )
    api = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30)

    def flow() -> dict[str, Any]:
        answer = api.get("/flows/primary/backup")
        return answer.json() if answer.status_code == 200 else {}

    with MirrorProcess(props) as mirror:
        eventually(
            lambda: flow().get("state") == "RUNNING",
            timeout=180,
            what="the flow RUNNING",
            log=mirror.log,
        )
        leave_open(backup, remote)  # partition 1 of the remote topic, open for 15 minutes
        series = (
            f'mm2_target_open_transaction_seconds{{partition="1",source="primary",'
            f'target="backup",topic="{remote}"}}'
        )  # the exposition sorts labels

        def shown() -> bool:
            if series in api.get("/metrics").text:
                return True
            raise AssertionError(f"not in /metrics; the flow: {flow()}")

        eventually(shown, timeout=180, what="the open transaction in /metrics", log=mirror.log)
        held = flow()
        assert held["state"] == "DEGRADED" and "a transaction open for" in held["cause"], held

        assert abort_hanging(backup).get((remote, 1)) == 0
        eventually(
            lambda: flow().get("state") == "RUNNING",
            timeout=180,
            what="RUNNING once the transaction is aborted",
            log=mirror.log,
        )
        eventually(
            lambda: series not in api.get("/metrics").text,
            timeout=60,
            what="the metric gone",
            log=mirror.log,
        )
