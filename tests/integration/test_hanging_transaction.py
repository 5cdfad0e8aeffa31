"""The runbook for a transaction that never ends (docs/operations.md), run on a real broker: a
transactional producer killed mid-transaction leaves its partitions' last stable offset behind
their end; kafka-transactions.sh abort (tests.support.transactions) moves it past the records."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support.kafka import KafkaCluster, create_topic, unique_name
from tests.support.transactions import abort_hanging, stuck_partitions
from tests.support.waiting import eventually

pytestmark = [pytest.mark.integration]

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


def test_a_transaction_left_open_is_found_and_aborted(primary: KafkaCluster) -> None:
    topic = create_topic(primary, unique_name("hanging"), partitions=2)
    subprocess.run([sys.executable, "-c", _PRODUCER, primary.bootstrap_servers, topic,
                    unique_name("txn")], check=True, timeout=120)  # fmt: skip
    stuck = {tp: start for tp, start in stuck_partitions(primary, watch_s=2).items()
             if tp[0] == topic}  # fmt: skip
    assert stuck == {(topic, 1): 0}, stuck

    aborted = abort_hanging(primary)
    assert aborted.get((topic, 1)) == 0, aborted
    eventually(
        lambda: (topic, 1) not in stuck_partitions(primary, watch_s=0),
        timeout=60,
        what="the last stable offset past the aborted transaction",
    )
