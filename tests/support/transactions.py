"""A transaction that never ends, found and aborted as docs/operations.md tells an operator to.

A one-broker Kafka 4.4 target that stops (halt) and comes back while a copy task's transaction
is being ended can skip that transaction's markers (LocalCluster.halt says when): its partitions'
last stable offset then stays behind their end for good, and the flow says so ("a transaction
that never ends may hold those partitions back"). mm2 cannot abort it (librdkafka has no
AbortTransaction call); the operator runs kafka-transactions.sh, and so do the tests that halt a
target under load, with the same tool (org.apache.kafka.tools.TransactionsCommand).
"""

from __future__ import annotations

import logging
import subprocess
import time
from collections.abc import Callable

from mm2.client.open_transactions import HANGING_S, OpenTransactions
from mm2.kafka.topics import TopicAdmin
from mm2.localcluster.jars import resolve_classpath
from mm2.localcluster.java import find_java
from tests.support.kafka import Cluster

__all__ = ["abort_hanging", "stuck_partitions", "unstuck"]

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
            [java, "-cp", classpath, "org.apache.kafka.tools.TransactionsCommand",
             "--bootstrap-server", cluster.bootstrap_servers, "abort", "--topic", topic,
             "--partition", str(partition), "--start-offset", str(start)],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        said = (done.stdout + done.stderr).strip()[-500:]
        if done.returncode != 0:
            raise AssertionError(f"kafka-transactions.sh abort {topic}-{partition} failed: {said}")
        log.warning("aborted the transaction at %s-%d from offset %d", topic, partition, start)
    return stuck


def unstuck(
    check: Callable[[], bool],
    target: Cluster,
    mirror_log: Callable[[], str],
    *,
    watch_s: float = 10.0,
) -> Callable[[], bool]:
    """`check`, for `eventually`: while it is not true yet and the mirror has said, since the
    last look, that a transaction that never ends holds partitions back, each partition whose
    last stable offset then stays put for `watch_s` seconds has its transaction aborted as
    docs/operations.md tells an operator to. A one-broker Kafka 4.4 target that stops, even
    cleanly (LocalCluster.halt), while a copy task's transaction is open can come back with
    that transaction ended on some of its partitions and open for good on others. Right after
    a target's outage, give a `watch_s` beyond the copy tasks' transaction timeout (60 s): the
    coordinator ends every transaction it knows of within that time, so only one nobody will
    end is aborted."""
    since = len(mirror_log())

    def run() -> bool:
        nonlocal since
        if check():
            return True
        said = mirror_log()
        if "a transaction that never ends" in said[since:]:
            since = len(said)  # watch again only once the mirror says it again
            aborted = abort_hanging(target, watch_s=watch_s)
            if aborted:
                log.warning("the mirror waited on a transaction that never ends; aborted at %s",
                            aborted)  # fmt: skip
        return False

    return run
