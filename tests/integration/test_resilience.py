"""Resilience of connect-mirror-maker on real brokers: lost state, outages, restarts, crashes.

Every test starts `connect-mirror-maker` as a subprocess and checks, per partition, what a
read_committed reader of the target sees against the source: nothing lost, nothing twice,
order kept (record content without offsets).

The clusters are this module's own pair (not the session's `primary`/`backup`): two tests halt
one of them and resume it on the same ports with its data (mm2.localcluster's halt/resume),
which would disturb other modules' tests on the shared clusters.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._config import AlterConfigOpType, ConfigEntry, ConfigResource

from mm2.localcluster import LocalCluster, LocalClusters
from tests.support import kafka
from tests.support.clusters import ClusterPair
from tests.support.kafka import Record, admin_client, content, count, read_topic
from tests.support.mirror import (
    PARTITIONS,
    ContinuousProducer,
    MirrorProcess,
    caught_up,
    free_port,
    make_topic,
    write_properties,
)
from tests.support.waiting import eventually

# Each test waits on its own deadlines (an outage of up to 60 s, then catch-up) that add up to
# more than pytest's default 300 s on a loaded CI host: the timeout is only a backstop for hangs.
pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(900)]
log = logging.getLogger(__name__)


@pytest.fixture(scope="module")
def clusters(cluster_pair: ClusterPair) -> LocalClusters:
    """A source and a target of this module's own, which tests may halt and resume."""
    return cluster_pair("resilience-source", "resilience-target")


@pytest.fixture
def source(clusters: LocalClusters) -> Iterator[LocalCluster]:
    cluster = clusters["resilience-source"]
    cluster.resume()  # a no-op unless an earlier test failed while it was halted
    yield cluster
    cluster.resume()


@pytest.fixture
def target(clusters: LocalClusters) -> Iterator[LocalCluster]:
    cluster = clusters["resilience-target"]
    cluster.resume()
    yield cluster
    cluster.resume()


# -- helpers -----------------------------------------------------------------------------------


def produce(cluster: LocalCluster, topic: str, start: int, n: int) -> int:
    """Records start..start+n-1 (keyed, spread over the partitions); returns start + n."""
    records = (
        (i % PARTITIONS, f"k{i}".encode(), f"r{i}".encode() * 10) for i in range(start, start + n)
    )
    kafka.produce(cluster.bootstrap_servers, topic, records, config={"linger.ms": 20})
    return start + n


def assert_each_once_in_order(source: LocalCluster, target: LocalCluster, topic: str) -> int:
    """Per partition, read_committed: every source record on the target once, in order."""
    upstream = read_topic(source.bootstrap_servers, topic)
    downstream: dict[int, list[Record]] = read_topic(
        target.bootstrap_servers, f"primary.{topic}", **{"isolation.level": "read_committed"}
    )
    assert sorted(downstream) == sorted(upstream), "partition counts differ"
    for p, records in upstream.items():
        want = content(records)
        got = content(downstream[p])
        missing = set(want) - set(got)
        assert not missing, (
            f"partition {p}: {len(missing)} records lost, e.g. {sorted(missing)[:3]}"
        )
        extra = set(got) - set(want)
        assert not extra, f"partition {p}: {len(extra)} records not on the source"
        assert len(got) == len(want), f"partition {p}: {len(got) - len(want)} duplicates"
        assert got == want, f"partition {p}: records reordered"
    return sum(len(r) for r in upstream.values())


def properties(tmp_path: Path, source: LocalCluster, target: LocalCluster, topic: str,
               extra: str = "") -> Path:  # fmt: skip
    return write_properties(
        tmp_path, source.bootstrap_servers, target.bootstrap_servers, topic, extra
    )


# -- tests -------------------------------------------------------------------------------------


def test_restart_on_an_empty_state_dir_copies_nothing_twice(
    source: LocalCluster, target: LocalCluster, tmp_path: Path
) -> None:
    """Positions live in Kafka: a mirror whose whole mm2.state.dir is gone resumes from them."""
    topic = make_topic(source, "nostate")
    n = produce(source, topic, 0, 4_000)
    props = properties(tmp_path, source, target, topic)
    with MirrorProcess(props) as first:
        eventually(
            lambda: caught_up(source, target, topic),
            timeout=180,
            what="the first N records",
            log=first.log,
        )
        assert first.stop() == 0, first.log()[-3000:]
    state = tmp_path / "state"
    assert state.is_dir(), "mm2.state.dir was never created"
    shutil.rmtree(state)
    total = produce(source, topic, n, 1_500)
    with MirrorProcess(props) as second:
        eventually(
            lambda: caught_up(source, target, topic),
            timeout=180,
            what="the M records after the restart",
            log=second.log,
        )
        time.sleep(3)  # time enough to copy anything twice, if it would
        assert second.stop() == 0, second.log()[-3000:]
    assert assert_each_once_in_order(source, target, topic) == total


def test_target_down_for_60_s_heals_without_a_rest_call(
    source: LocalCluster, target: LocalCluster, tmp_path: Path
) -> None:
    topic = make_topic(source, "tdown")
    port = free_port()
    props = properties(tmp_path, source, target, topic, f"listeners = http://127.0.0.1:{port}\n")
    api = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60)
    remote = f"primary.{topic}"
    producer = ContinuousProducer(source, topic, rate=150, limit=30_000, seconds=120)
    with MirrorProcess(props) as mirror:
        try:
            producer.start()
            eventually(
                lambda: count(target.bootstrap_servers, remote) > 200,
                timeout=180,
                what="first records on the target",
                log=mirror.log,
            )
            target.halt()  # clean, as a rolling restart stops a broker
            log.info("target halted with %d records produced", producer.sent)
            time.sleep(60)
            target.resume()
            log.info("target resumed with %d records produced", producer.sent)
            producer.join()
        finally:
            producer.stop()
            target.resume()
        eventually(  # by itself: nobody aborts a transaction by hand
            lambda: caught_up(source, target, topic),
            timeout=240,
            what="catch-up after the target came back",
            log=mirror.log,
        )

        # No REST call healed it; REST only reads the outcome.
        names = api.get("/connectors").json()
        sources = [n for n in names if "MirrorSourceConnector" in n and n.startswith("primary")]
        assert len(sources) == 1, names

        def source_task_running() -> bool:
            body = api.get(f"/connectors/{sources[0]}/status").json()
            tasks = body.get("tasks") or []
            return bool(tasks) and all(t["state"] == "RUNNING" for t in tasks)

        eventually(
            source_task_running,
            timeout=120,
            what="the MirrorSourceConnector task RUNNING",
            log=mirror.log,
        )
        assert api.get(f"/connectors/{sources[0]}/status").json()["connector"]["state"] == (
            "RUNNING"
        )
        api.close()
        assert mirror.stop() == 0, mirror.log()[-3000:]
    total = assert_each_once_in_order(source, target, topic)
    assert total == producer.sent
    log.info("target down 60 s: %d records, each once", total)


def remote_config(admin: AdminClient, topic: str, name: str) -> str | None:
    try:
        resource = ConfigResource("topic", topic)
        entry = admin.describe_configs([resource])[resource].result(30).get(name)
    except KafkaException:
        return None
    return None if entry is None else entry.value


def test_source_broker_restart_then_config_change_still_arrives(
    source: LocalCluster, target: LocalCluster, tmp_path: Path
) -> None:
    topic = make_topic(source, "srestart")
    remote = f"primary.{topic}"
    n = produce(source, topic, 0, 1_000)
    props = properties(tmp_path, source, target, topic)
    target_admin = admin_client(target.client_config())
    with MirrorProcess(props) as mirror:
        eventually(
            lambda: caught_up(source, target, topic),
            timeout=180,
            what="records before the restart",
            log=mirror.log,
        )
        try:
            source.halt()
            log.info("source halted")
            time.sleep(20)  # long enough for the mirror's clients to notice
        finally:
            source.resume()
        log.info("source resumed")
        source_admin = admin_client(source.client_config())
        change = ConfigResource("topic", topic, incremental_configs=[
            ConfigEntry("retention.ms", "123456789",
                        incremental_operation=AlterConfigOpType.SET)])  # fmt: skip
        source_admin.incremental_alter_configs([change])[change].result(60)
        total = produce(source, topic, n, 1_000)
        eventually(
            lambda: remote_config(target_admin, remote, "retention.ms") == "123456789",
            timeout=180,
            what="the config change on the target's remote topic",
            log=mirror.log,
        )
        eventually(
            lambda: caught_up(source, target, topic),
            timeout=180,
            what="records after the restart",
            log=mirror.log,
        )
        assert mirror.stop() == 0, mirror.log()[-3000:]
    assert assert_each_once_in_order(source, target, topic) == total


def test_kill_9_twice_under_load_exactly_once(
    source: LocalCluster, target: LocalCluster, tmp_path: Path
) -> None:
    topic = make_topic(source, "kill2")
    remote = f"primary.{topic}"
    props = properties(tmp_path, source, target, topic)
    producer = ContinuousProducer(source, topic, rate=300, limit=30_000, seconds=110).start()
    mirrors: list[MirrorProcess] = []
    try:
        first = MirrorProcess(props)
        mirrors.append(first)
        eventually(
            lambda: count(target.bootstrap_servers, remote) > 1_000,
            timeout=180,
            what="first records",
            log=first.log,
        )
        first.kill9()
        copied = count(target.bootstrap_servers, remote)
        log.info("first kill -9 at %d records produced, %d offsets on the target",
                 producer.sent, copied)  # fmt: skip
        second = MirrorProcess(props)
        mirrors.append(second)
        # The second crash comes at another moment: once the new mirror is copying again.
        eventually(
            lambda: count(target.bootstrap_servers, remote) > copied + 1_500,
            timeout=180,
            what="records copied by the second mirror",
            log=second.log,
        )
        time.sleep(1.3)
        second.kill9()
        log.info("second kill -9 at %d records produced", producer.sent)
        third = MirrorProcess(props)
        mirrors.append(third)
        producer.join()
        eventually(
            lambda: caught_up(source, target, topic), timeout=240, what="catch-up", log=third.log
        )
        time.sleep(3)
        assert third.stop() == 0, third.log()[-3000:]
    finally:
        producer.stop()
        for mirror in mirrors:
            if mirror.process.poll() is None:
                mirror.stop()
    total = assert_each_once_in_order(source, target, topic)
    assert total == producer.sent
    log.info("two kill -9 under load: %d records, each once", total)
