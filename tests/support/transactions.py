"""A transaction that never ends, found and aborted as docs/operations.md tells an operator to.

For a transaction mm2 did not start (another producer's on a remote topic): its partitions'
last stable offset stays behind their end, the flow says so, and the operator runs
kafka-transactions.sh (org.apache.kafka.tools.TransactionsCommand), as
tests/integration/test_hanging_transaction.py does, the one test that aborts by hand. What a
broker's stop leaves open of mm2's own copy tasks, mm2 ends itself (mm2.copy.fencing).
"""

from __future__ import annotations

import logging
import subprocess
import time

from mm2.client.open_transactions import HANGING_S, OpenTransactions
from mm2.kafka.topics import TopicAdmin
from mm2.localcluster.jars import resolve_classpath
from mm2.localcluster.java import find_java
from tests.support.kafka import Cluster

__all__ = ["abort_hanging", "stuck_partitions"]

log = logging.getLogger(__name__)

TP = tuple[str, int]


def stuck_partitions(cluster: Cluster, *, watch_s: float = 10.0) -> dict[TP, int]:
    """Partitions whose last stable offset is behind their end and has not moved in `watch_s`
    seconds (a transaction open that long: copy tasks end theirs every 100 ms), with that
    offset: where the open transaction starts. The mirror's own check (OpenTransactions),
    with its clock set so that `watch_s` counts as its HANGING_S."""
    config = cluster.client_config()
    counts = TopicAdmin(config, timeout=30).list_topics()
    partitions = [(t, p) for t, n in counts.items() for p in range(n)]
    check = OpenTransactions(config, timeout=30)
    check.check(partitions, now=0.0)
    time.sleep(watch_s)
    return {(o.topic, o.partition): o.start for o in check.check(partitions, now=HANGING_S)}


def abort_hanging(cluster: Cluster, *, watch_s: float = 10.0) -> dict[TP, int]:
    """Abort the transaction that holds each stuck partition back (`kafka-transactions.sh
    abort --topic T --partition P --start-offset N`), stuck for `watch_s` seconds; the
    partitions aborted."""
    stuck = stuck_partitions(cluster, watch_s=watch_s)
    if not stuck:
        return {}
    classpath = ":".join(str(jar) for jar in resolve_classpath())
    java = str(find_java().executable)
    for (topic, partition), start in sorted(stuck.items()):
        done = subprocess.run(
            [
                java,
                "-cp",
                classpath,
                "org.apache.kafka.tools.TransactionsCommand",
                "--bootstrap-server",
                cluster.bootstrap_servers,
                "abort",
                "--topic",
                topic,
                "--partition",
                str(partition),
                "--start-offset",
                str(start),
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        said = (done.stdout + done.stderr).strip()[-500:]
        if done.returncode != 0:
            raise AssertionError(f"kafka-transactions.sh abort {topic}-{partition} failed: {said}")
        log.warning("aborted the transaction at %s-%d from offset %d", topic, partition, start)
    return stuck
