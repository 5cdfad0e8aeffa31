"""Transactions a copy task left open on the target are ended by the mirror itself.

The state a target broker's stop can leave (docs/architecture.md, "Transactions left
open"): records of one of the copy tasks' producers appended to a partition of the
offsets topic that the transaction coordinator does not know belongs to the transaction, so no
marker ever reaches it. Made here on demand: with the broker's partition verification off for a
moment, an aiokafka transactional producer holding copy task 0's transactional id appends a
record to partition 0 of the offsets topic and to partition 1 of the remote topic without
AddPartitionsToTxn. Every read_committed reader of the positions then stops at the first for
good, and every reader of the remote topic at the second; the mirror must start, end both
itself, copy every record once (the left-open ones aborted, never committed by a later marker)
and count them, with no kafka-transactions.sh.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.errors import InvalidTxnState
from aiokafka.structs import TopicPartition
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._config import ConfigResource
from confluent_kafka.cimpl import NewTopic

from mm2.copy.fencing import held_back
from mm2.copy.position_record import STATS_HEADER, position_key
from mm2.kafka.offsets import OffsetLister
from mm2.records import OffsetSync
from mm2.records.connect_offsets import encode_offset_value
from tests.support.kafka import (
    KafkaCluster,
    Record,
    admin_client,
    create_topic,
    produce,
    read_topic,
    set_broker_config,
    unique_name,
)
from tests.support.mirror import MirrorProcess, free_port, write_properties
from tests.support.waiting import eventually

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

_VERIFY = "transaction.partition.verification.enable"


def _verification(admin: AdminClient, on: bool) -> None:
    """Partition verification on or off on every broker, once each broker says it is."""
    brokers = set_broker_config(admin, _VERIFY, str(on).lower())

    def applied() -> bool:  # a dynamic broker config reaches the broker after the controller
        wanted = [ConfigResource(ConfigResource.Type.BROKER, b) for b in brokers]
        for future in admin.describe_configs(wanted).values():
            if future.result(timeout=30)[_VERIFY].value != str(on).lower():
                return False
        return True

    eventually(applied, timeout=60, what=f"{_VERIFY}={str(on).lower()} on every broker")


def _left_open(bootstrap: str, tid: str, places: list[tuple[str, int]]) -> None:
    """_append_unannounced, again while a broker still verifies partitions (INVALID_TXN_STATE:
    it appended nothing), for at most a minute."""
    deadline = time.monotonic() + 60
    while True:
        try:
            asyncio.run(_append_unannounced(bootstrap, tid, places))
            return
        except InvalidTxnState:
            if time.monotonic() > deadline:
                raise
            time.sleep(1)


async def _append_unannounced(bootstrap: str, tid: str, places: list[tuple[str, int]]) -> None:
    """A record of `tid`'s producer on each topic-partition, of which its coordinator never
    hears: what a broker's stop can leave behind."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=tid)
    await producer.start()
    try:
        await producer.begin_transaction()
        for topic, partition in places:
            # aiokafka sends AddPartitionsToTxn only for partitions it has not added yet.
            producer._txn_manager._txn_partitions.add(TopicPartition(topic, partition))
            await producer.send_and_wait(
                topic, b"left open", key=b"not-a-position", partition=partition
            )
        # Not ended: the coordinator holds no transaction of it to end (InvalidTxnState).
    finally:
        await producer.stop()


def test_transactions_left_open_on_the_offsets_topic_and_a_remote_topic_are_ended_by_the_mirror(
    primary: KafkaCluster, backup: KafkaCluster, tmp_path: Path
) -> None:
    offsets = f"mm2-offsets.{uuid.uuid4().hex[:8]}.internal"
    topic = create_topic(primary, unique_name("left-open"), partitions=2)
    remote = f"primary.{topic}"
    admin = admin_client(backup.client_config())
    made = admin.create_topics(
        [
            NewTopic(
                offsets,
                num_partitions=5,
                replication_factor=1,
                config={"cleanup.policy": "compact"},
            ),
            NewTopic(remote, num_partitions=2, replication_factor=1),
        ]
    )
    for future in made.values():
        future.result(timeout=60)
    watched = [(offsets, p) for p in range(5)] + [(remote, p) for p in range(2)]
    _verification(admin, on=False)
    task_0 = "primary-mm2-MirrorSourceConnector-0"  # Connect's `<source>-mm2-<connector>-<task>`
    try:  # offsets partition 0 (every reader of positions waits on it) and remote partition 1
        _left_open(backup.bootstrap_servers, task_0, [(offsets, 0), (remote, 1)])
    finally:
        _verification(admin, on=True)
    lister = OffsetLister(backup.client_config(), timeout=30)
    # Open, and nothing will end them by themselves.
    assert held_back(lister, watched) == {(offsets, 0): 0, (remote, 1): 0}

    values: set[bytes | None] = {b"%d" % i for i in range(200)}
    produce(primary.bootstrap_servers, topic, [(i % 2, None, b"%d" % i) for i in range(200)])
    port = free_port()
    props = write_properties(
        tmp_path,
        primary.bootstrap_servers,
        backup.bootstrap_servers,
        topic,
        f"listeners = http://127.0.0.1:{port}\noffset.storage.topic = {offsets}\n"
        "offset.storage.partitions = 5\n",
    )
    api = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30)

    def copied() -> list[bytes | None]:
        read = read_topic(backup.bootstrap_servers, remote, **{"isolation.level": "read_committed"})
        return [record[2] for records in read.values() for record in records]

    with MirrorProcess(props) as mirror, api:
        eventually(
            lambda: len(copied()) >= 200, timeout=240, what="every record copied", log=mirror.log
        )
        assert held_back(lister, watched) == {}
        metric = 'mm2_offsets_transactions_ended_total{source="primary",target="backup"}'

        def counted() -> Any:
            lines = [
                line for line in api.get("/metrics").text.splitlines() if line.startswith(metric)
            ]
            assert lines and float(lines[0].split()[-1]) == 2, lines
            return lines

        eventually(counted, timeout=60, what="the ended transactions counted", log=mirror.log)
        assert "ended the transactions earlier copy tasks left open" in mirror.log()
        time.sleep(3)  # time enough to copy anything twice, if it would
    got = copied()
    # Nothing twice, and the left-open records aborted, not committed by a later marker.
    assert len(got) == 200 and set(got) == values, set(got) - values


@dataclass
class _Cut:
    """A one-partition flow that copied 100 records and stopped, 50 more on the source, and a
    producer holding copy task 0's transactional id to leave on the target what a broker's
    stop can leave."""

    props: Path
    topic: str
    remote: str
    offsets: str
    more: list[Record]  # source records 100..149
    task_0: Producer
    bootstrap: str  # the target's

    def copied(self) -> list[bytes | None]:
        read = read_topic(self.bootstrap, self.remote, **{"isolation.level": "read_committed"})
        return [record[2] for records in read.values() for record in records]

    def copies_of_more(self) -> int:
        """The copies of records 100..149, in an open transaction of copy task 0; returns the
        offset of the first."""
        at: list[int] = []
        self.task_0.begin_transaction()
        for _offset, key, value, timestamp, headers in self.more:
            self.task_0.produce(
                self.remote,
                value,
                key,
                partition=0,
                timestamp=timestamp,
                headers=list(headers),
                on_delivery=lambda _err, msg: at.append(msg.offset() or 0),
            )
        assert self.task_0.flush(30) == 0
        return min(at)


def _cut(primary: KafkaCluster, backup: KafkaCluster, tmp_path: Path, prefix: str) -> _Cut:
    offsets = f"mm2-offsets.{uuid.uuid4().hex[:8]}.internal"
    topic = create_topic(primary, unique_name(prefix), partitions=1)
    produce(primary.bootstrap_servers, topic, [(0, b"k%d" % i, b"%d" % i) for i in range(100)])
    props = write_properties(
        tmp_path,
        primary.bootstrap_servers,
        backup.bootstrap_servers,
        topic,
        f"offset.storage.topic = {offsets}\n",
    )
    task_0 = Producer(
        {
            **backup.client_config(),
            "transactional.id": "primary-mm2-MirrorSourceConnector-0",
            "partitioner": "murmur2_random",
        }
    )
    cut = _Cut(props, topic, f"primary.{topic}", offsets, [], task_0, backup.bootstrap_servers)
    with MirrorProcess(props) as mirror:
        eventually(lambda: len(cut.copied()) >= 100, timeout=240, what="100 copied", log=mirror.log)
        assert mirror.stop() == 0, mirror.log()[-3000:]
    produce(primary.bootstrap_servers, topic, [(0, b"k%d" % i, b"%d" % i) for i in range(100, 150)])
    cut.more = read_topic(primary.bootstrap_servers, topic)[0][100:]
    assert len(cut.more) == 50
    task_0.init_transactions(30)  # the stopped mirror's copy task 0 fenced
    return cut


def _resume(cut: _Cut, primary: KafkaCluster, said: str) -> None:
    """The mirror started again says `said`, copies one more record, and the remote topic then
    holds records 0..150 committed, each once and in order."""
    with MirrorProcess(cut.props) as mirror:
        eventually(lambda: said in mirror.log(), timeout=240, what=said, log=mirror.log)
        produce(primary.bootstrap_servers, cut.topic, [(0, b"k150", b"150")])
        eventually(lambda: len(cut.copied()) >= 151, timeout=240, what="record 150", log=mirror.log)
        time.sleep(3)  # time enough to copy anything twice, if it would
    got = cut.copied()
    assert got == [b"%d" % i for i in range(151)], len(got)


def test_records_committed_whose_positions_were_aborted_are_not_copied_again(
    primary: KafkaCluster, backup: KafkaCluster, tmp_path: Path
) -> None:
    """The state a target broker's restart left on real runs (test_target_restarts): the
    coordinator wrote a copy task's commit marker on the remote partition and dropped the one
    for its position; back, the copy task's next transaction joined that position and the
    fencing aborted both. Nothing is held, the remote topic holds the records committed, and the
    stored position is older. Made here while the mirror is stopped: copies of 50 more source
    records committed as copy task 0, and no position. The restarted mirror must move the
    position up and resume after them: nothing twice."""
    cut = _cut(primary, backup, tmp_path, "aborted-positions")
    cut.copies_of_more()
    cut.task_0.commit_transaction(30)
    assert len(cut.copied()) == 150
    _resume(cut, primary, "positions moved up to what the remote topics hold committed")


def test_positions_committed_whose_records_were_aborted_are_copied_again(
    primary: KafkaCluster, backup: KafkaCluster, tmp_path: Path
) -> None:
    """The other half of a transaction a broker's stop cut: its positions committed, its
    records' marker dropped and then aborted by the fencing (seen on a real run: 3 records
    lost). The copy task was told the commit succeeded, so it wrote an offset sync for them.
    Made here while the mirror is stopped: copies of 50 more source records aborted as copy
    task 0, a committed position after them, and an offset sync pointing at the first. The
    restarted mirror must walk from the sync before it (the latest one's copy is not on the
    target), find that every committed remote record pairs with the source's to the end, move
    the position back and copy the 50: nothing lost, nothing twice."""
    cut = _cut(primary, backup, tmp_path, "aborted-records")
    key = position_key("MirrorSourceConnector", "primary", cut.topic, 0)
    stored = [r for rs in read_topic(backup.bootstrap_servers, cut.offsets).values() for r in rs]
    last = [r for r in stored if r[1] == key][-1]  # its headers name the source cluster
    first = cut.copies_of_more()
    cut.task_0.abort_transaction(30)
    syncs = Producer(primary.client_config())
    sync = OffsetSync(cut.topic, 0, 100, first)
    syncs.produce("mm2-offset-syncs.backup.internal", sync.to_value_bytes(), sync.to_key_bytes())
    assert syncs.flush(30) == 0
    cut.task_0.begin_transaction()
    kept: list[tuple[str, str | bytes | None]] = [(n, v) for n, v in last[4] if n != STATS_HEADER]
    cut.task_0.produce(cut.offsets, encode_offset_value(149), key, headers=kept)
    cut.task_0.commit_transaction(30)
    assert len(cut.copied()) == 100
    _resume(cut, primary, "positions moved back to what the remote topics hold committed")
