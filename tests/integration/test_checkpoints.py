"""MirrorCheckpointConnector on real brokers: checkpoints, exact translation, group offset sync."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition

from mm2.errors import KafkaClientError
from mm2.kafka.groups import GroupAdmin
from mm2.kafka.log_reader import LogReader
from mm2.kafka.take import take
from mm2.records import Checkpoint, TopicPartition
from tests.support.kafka import Cluster, create_topic, read_topic
from tests.support.mirror import MirrorProcess, write_properties
from tests.support.waiting import eventually

pytestmark = [pytest.mark.integration, pytest.mark.slow]


RECORDS = 300
SETTINGS = """
refresh.groups.interval.seconds = 1
emit.checkpoints.interval.seconds = 1
sync.group.offsets.enabled = true
sync.group.offsets.interval.seconds = 1
offset.lag.max = 100
"""


def produce_with_transactions(bootstrap: str, topic: str) -> None:
    """RECORDS records per partition in transactions, one aborted in every three: gaps."""
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"tx-{topic}"})
    producer.init_transactions(30)
    now = int(time.time() * 1000)
    n = 0
    while n < RECORDS:
        for abort in (False, False, True):
            producer.begin_transaction()
            for p in (0, 1):
                for i in range(10):
                    value = f"{'aborted' if abort else 'kept'}-{n + i}".encode()
                    producer.produce(topic, value, partition=p, timestamp=now)
            if abort:
                assert producer.flush(30) == 0  # on the log before the abort (else purged unsent)
                producer.abort_transaction(30)
            else:
                producer.commit_transaction(30)
                n += 10
    producer.flush(30)


def consume_and_commit(bootstrap: str, topic: str, group: str, upto: int) -> dict[int, int]:
    """Read `upto` committed records of each partition in `group`, commit, return the offsets."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
        }
    )
    try:
        consumer.assign([KafkaTopicPartition(topic, p, 0) for p in (0, 1)])
        seen = {0: 0, 1: 0}
        positions: dict[int, int] = {}
        deadline = time.monotonic() + 60
        while min(seen.values()) < upto and time.monotonic() < deadline:
            for msg in take(consumer, 50, 1.0):
                if msg.error():
                    continue
                p = msg.partition()
                assert p is not None  # a record has one
                if seen[p] >= upto:
                    continue
                seen[p] += 1
                positions[p] = (msg.offset() or 0) + 1
        assert min(seen.values()) == upto
        consumer.commit(
            offsets=[KafkaTopicPartition(topic, p, o) for p, o in positions.items()],
            asynchronous=False,
        )
        return positions
    finally:
        consumer.close()


def checkpoints(backup: Cluster, group: str) -> dict[TopicPartition, Checkpoint]:
    reader = LogReader(backup.client_config(), "primary.checkpoints.internal")
    try:
        out = {}
        try:
            records = reader.read_to_end()
        except KafkaClientError:  # not created yet
            return {}
        for record in records:
            if record.key and record.value:
                cp = Checkpoint.from_record(record.key, record.value)
                if cp.group_id == group:
                    out[cp.topic_partition] = cp
        return out
    finally:
        reader.close()


def values_from(bootstrap: str, topic: str, group: str, expect: int) -> dict[int, list[str]]:
    """What a consumer of `group` reads from its committed offsets on, per partition."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    got: dict[int, list[str]] = {0: [], 1: []}
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 60
        while sum(len(v) for v in got.values()) < expect and time.monotonic() < deadline:
            for msg in take(consumer, 100, 1.0):
                if not msg.error():
                    p = msg.partition()
                    assert p is not None  # a record has one
                    got[p].append((msg.value() or b"").decode())
        return got
    finally:
        consumer.close()


def copies_on_target(bootstrap: str, topic: str, values: set[str]) -> dict[tuple[int, str], int]:
    """The target offset of each record in `values`, per partition: (partition, value) -> offset.

    mm2 writes the target in transactions, so its own commit markers take offsets there: where
    a copy lands depends on how the backlog was cut into transactions, and only the log says.
    """
    log = read_topic(bootstrap, topic, **{"isolation.level": "read_committed"})
    found = {
        (p, (record[2] or b"").decode()): record[0]
        for p, records in log.items()
        for record in records
    }
    wanted = {(p, v) for p in (0, 1) for v in values}
    assert wanted <= set(found), f"copies not found on the target: {wanted - set(found)}"
    return {key: found[key] for key in wanted}


@pytest.fixture
def active_consumer(backup: Cluster) -> Iterator[Callable[[str, str], None]]:
    stop = threading.Event()
    threads: list[threading.Thread] = []

    def start(group: str, topic: str) -> None:
        def run() -> None:
            consumer = Consumer(
                {
                    "bootstrap.servers": backup.bootstrap_servers,
                    "group.id": group,
                    "enable.auto.commit": False,
                    "auto.offset.reset": "latest",
                }
            )
            consumer.subscribe([topic])
            while not stop.is_set():
                consumer.poll(0.2)
            consumer.close()

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        threads.append(thread)

    yield start
    stop.set()
    for thread in threads:
        thread.join(10)


def test_groups_fail_over_exactly_and_active_groups_are_left_alone(
    primary: Cluster,
    backup: Cluster,
    new_topic: Callable[..., str],
    new_group: Callable[[], str],
    active_consumer: Callable[[str, str], None],
    tmp_path: Path,
) -> None:
    topic = new_topic(primary, partitions=2)
    remote = f"primary.{topic}"
    produce_with_transactions(primary.bootstrap_servers, topic)
    caught_up, lagging, busy = new_group(), new_group(), new_group()
    committed = consume_and_commit(primary.bootstrap_servers, topic, caught_up, upto=157)
    consume_and_commit(primary.bootstrap_servers, topic, lagging, upto=3)
    consume_and_commit(primary.bootstrap_servers, topic, busy, upto=50)
    props = write_properties(
        tmp_path, primary.bootstrap_servers, backup.bootstrap_servers, topic, SETTINGS
    )
    # Someone already consumes `busy` on the backup: its offsets must not be touched.
    create_topic(backup, remote, partitions=2)
    active_consumer(busy, remote)
    admin = GroupAdmin(backup.client_config())

    def busy_is_active() -> bool:
        try:
            return admin.describe([busy])[busy].active
        except KafkaClientError:  # the group coordinator may still be loading
            return False

    eventually(busy_is_active, timeout=60, what="busy group active")
    with MirrorProcess(props) as mirror:
        # A group that read n records of each partition resumes at the copy of record n (the
        # n+1st kept one): its offset on the target, wherever mm2's transactions put it.
        copies = eventually(
            lambda: copies_on_target(backup.bootstrap_servers, remote, {"kept-157", "kept-3"}),
            timeout=120,
            what="copies of kept-3 and kept-157 on the target",
            log=mirror.log,
        )
        resume = {
            group: {p: copies[(p, f"kept-{read}")] for p in (0, 1)}
            for group, read in ((caught_up, 157), (lagging, 3))
        }
        for group in (caught_up, lagging):
            expected = {TopicPartition(remote, p): o for p, o in resume[group].items()}

            def translated(g: str = group) -> dict[TopicPartition, int]:
                return {tp: cp.downstream_offset for tp, cp in checkpoints(backup, g).items()}

            try:
                eventually(
                    lambda e=expected: translated() == e,  # type: ignore[misc]
                    timeout=120,
                    what=f"checkpoints of {group}",
                    log=mirror.log,
                )
            except AssertionError as exc:
                raise AssertionError(f"{translated()} != {expected}") from exc
        # Checkpoints carry the upstream offsets too, in Apache's layout.
        cps = checkpoints(backup, caught_up)
        assert {tp.partition: cp.upstream_offset for tp, cp in cps.items()} == committed

        def committed_on_backup(group: str) -> dict[int, int]:
            got = admin.committed_offsets([group])[group]
            return {tp.partition: om.offset for tp, om in got.items()}

        def synced(group: str, offsets: dict[int, int]) -> bool:
            return committed_on_backup(group) == offsets

        for group, what in ((caught_up, "offsets synced"), (lagging, "lagging group synced")):
            try:
                eventually(
                    lambda g=group: synced(g, resume[g]),  # type: ignore[misc]
                    timeout=60,
                    what=what,
                    log=mirror.log,
                )
            except AssertionError as exc:
                found = committed_on_backup(group)
                raise AssertionError(f"{group} on backup: {found} != {resume[group]}") from exc
        eventually(
            lambda: f"not syncing offsets of group {busy!r}" in mirror.log(),
            timeout=60,
            what="the active group reported",
            log=mirror.log,
        )
        assert admin.committed_offsets([busy])[busy] == {}
        assert mirror.stop() == 0
    # The task kept its view of the offset syncs: a restart resumes the topic from there.
    state = json.loads((tmp_path / "state/primary_to_backup/checkpoint-task.json").read_text())
    assert state["position"] > 0
    assert any(e["topic"] == topic and e["segments"] for e in state["translator"]["exact"])
    # The failed-over group reads exactly what it had not read on primary: nothing twice.
    remaining = values_from(backup.bootstrap_servers, remote, caught_up, 2 * (RECORDS - 157))
    for p in (0, 1):
        assert remaining[p] == [f"kept-{i}" for i in range(157, RECORDS)], p
