"""The target broker restarted four times in a row under load: copying resumes after each restart
by itself, and at the end a read_committed reader of the target sees every record once and in
order. No REST call, no kafka-transactions.sh: a transaction a stop left open on the offsets
topic is the mirror's to end (mm2.copy.fencing), and the test fails if it is not ended.

Two clean stops (SIGTERM, as a rolling upgrade restarts a broker) and two kill -9 (the second one
left a transaction open on real runs: positions on two offsets partitions and records on one
remote partition, with its records on another remote partition committed), with outages of
a few seconds, each at another point of the copy tasks' transactions (the soak test has the 60 s
outage, past the transaction timeout). The clusters are this module's own.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from mm2.copy.fencing import held_back
from mm2.kafka.offsets import OffsetLister
from mm2.localcluster import LocalCluster, LocalClusters
from tests.support.clusters import ClusterPair
from tests.support.kafka import count
from tests.support.mirror import (
    PARTITIONS,
    MirrorProcess,
    caught_up,
    make_topic,
    write_properties,
)
from tests.support.sequenced import Follower, answers, exactness, sequenced_producer
from tests.support.waiting import eventually

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(2400)]
log = logging.getLogger(__name__)

RESTARTS = 4
RATE = 300  # records/s over all partitions
KILLED = {2, 4}  # restarts that kill -9 the broker


def beyond(follower: Follower, mark: int) -> Callable[[], bool]:
    return lambda: follower.copied() >= mark


def stuck(target: LocalCluster, remote: str, follower: Follower) -> str:
    """What a failed wait leaves to read: where the follower is in each partition, and the
    partitions of the offsets topic and the remote topic whose last stable offset stayed at one
    offset behind their end for 5 s (a transaction left open; the copy tasks' own are open for
    a moment at any time, and their last stable offset moves)."""
    lister = OffsetLister(target.client_config(), timeout=30)
    offsets = [("mm2-offsets.primary.internal", p) for p in range(25)]
    partitions = offsets + [(remote, p) for p in range(PARTITIONS)]
    try:
        before = held_back(lister, partitions)
        time.sleep(5)
        held = {tp: at for tp, at in held_back(lister, partitions).items() if before.get(tp) == at}
    except Exception as exc:  # the report of a failure must not hide it
        held = {("?", -1): repr(exc)}  # type: ignore[dict-item]
    return (
        f"follower's last sequence per partition {follower.last()} (its consumer replaced "
        f"{follower.replaced} time(s)); held back for 5 s {held}"
    )


@pytest.fixture(scope="module")
def clusters(cluster_pair: ClusterPair) -> LocalClusters:
    return cluster_pair("restarts-source", "restarts-target")


def test_target_restarts_under_load_lose_double_and_reorder_nothing(
    clusters: LocalClusters, tmp_path: Path
) -> None:
    source, target = clusters["restarts-source"], clusters["restarts-target"]
    topic = make_topic(source, "restarts")
    remote = f"primary.{topic}"
    props = write_properties(tmp_path, source.bootstrap_servers, target.bootstrap_servers, topic)
    producer = sequenced_producer(source, topic, RATE)
    follower: Follower | None = None
    with MirrorProcess(props) as mirror:
        try:
            producer.start()
            eventually(
                answers(lambda: count(target.bootstrap_servers, remote) > 500),
                timeout=300,
                what="the first records on the target",
                log=mirror.log,
            )
            follower = Follower(target, remote)
            gauge = follower
            for restart in range(1, RESTARTS + 1):
                # SIGTERM and the broker's own controlled shutdown, or kill -9
                target.halt(grace=0 if restart in KILLED else 60)
                time.sleep(2 + restart % 4)  # outages of 2 to 5 s
                target.resume()
                began = time.monotonic()
                try:
                    eventually(
                        beyond(gauge, producer.sent),
                        timeout=300,
                        what=f"copying again after restart {restart}",
                        log=mirror.log,
                    )
                except AssertionError as exc:
                    raise AssertionError(f"{exc}\n{stuck(target, remote, gauge)}") from None
                log.info(
                    "restart %d: everything produced until the target came back copied "
                    "%.1f s after it did",
                    restart,
                    time.monotonic() - began,
                )
                time.sleep(restart % 3)  # the next stop at another point of a transaction
            producer.stop()
            producer.join(0)  # every record sent was delivered, no delivery error
            eventually(
                answers(lambda: caught_up(source, target, topic)),
                timeout=300,
                what="the final catch-up",
                log=mirror.log,
            )
            time.sleep(3)  # time enough to copy anything twice, if it would
            lister = OffsetLister(target.client_config(), timeout=30)
            assert held_back(lister, [("mm2-offsets.primary.internal", p) for p in range(25)]) == {}
            assert held_back(lister, [(remote, p) for p in range(PARTITIONS)]) == {}
            assert mirror.stop() == 0, mirror.log()[-3000:]
            ended = mirror.log().count("ended the transactions earlier copy tasks left open")
            log.info(
                "the mirror ended transactions left open %d time(s); the follower's consumer "
                "was replaced %d time(s)",
                ended,
                gauge.replaced,
            )
        finally:
            producer.stop()
            if follower is not None:
                follower.close()
            target.resume()
    found = exactness(source, target, topic)
    log.info("%d restarts: %s", RESTARTS, found)
    assert (found.lost, found.duplicates, found.reordered, found.foreign) == (0, 0, 0, 0), found
    assert found.records == producer.delivered
