"""Never rewind an active group: consumers on the target join and leave the group
over and over, classic and KIP-848 (`group.protocol=consumer`), while the source group commits
every 200 ms and the mirror syncs its offsets every second.

Every committed offset of the target group is sampled ten times a second. None may change while
a member is in the group (the mirror writes only into a group without members), and none may go
backwards (each member consumes and commits past the translated offsets before it leaves: the
mirror must not move the group back to the source's position).
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from tests.support.kafka import Cluster, count, create_topic
from tests.support.mirror import ContinuousProducer, MirrorProcess, write_properties
from tests.support.waiting import eventually

pytestmark = [pytest.mark.integration, pytest.mark.slow]
log = logging.getLogger(__name__)

PARTITIONS = 2
FLIPS = 8  # per protocol


class Sampler:
    """The target group's committed offsets, ten times a second, with whether a member of
    ours was in the group at that moment."""

    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        self._admin = AdminClient({"bootstrap.servers": bootstrap})
        self._group, self._topic = group, topic
        self.member_in = False
        self.samples: list[tuple[float, bool, dict[int, int]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def offsets(self) -> dict[int, int]:
        request = ConsumerGroupTopicPartitions(self._group)
        result = self._admin.list_consumer_group_offsets([request])[self._group].result(10)
        return {
            tp.partition: tp.offset
            for tp in result.topic_partitions or []
            if tp.topic == self._topic and tp.offset >= 0
        }

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            present = self.member_in
            try:
                found = self.offsets()
            except Exception:  # a coordinator moving: no sample
                continue
            # counted as "in" only if the member was in before and after the read
            self.samples.append((time.monotonic(), present and self.member_in, found))

    def start(self) -> Sampler:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)


def _source_group(cluster: Cluster, topic: str, group: str, stop: threading.Event) -> None:
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "auto.commit.interval.ms": 200,
        }
    )
    consumer.subscribe([topic])
    while not stop.is_set():
        consumer.poll(0.1)
    consumer.close()


def _flip(backup: Cluster, remote: str, group: str, protocol: str, sampler: Sampler) -> None:
    """One member joins, stays about two seconds without committing, reads to the end of what
    it has, commits that (ahead of the translated offsets) and leaves."""
    config: dict[str, Any] = {
        "bootstrap.servers": backup.bootstrap_servers,
        "group.id": group,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
    }
    if protocol == "consumer":
        config["group.protocol"] = "consumer"
    consumer = Consumer(config)
    consumer.subscribe([remote])
    deadline = time.monotonic() + 60
    while not consumer.assignment():
        assert time.monotonic() < deadline, f"no assignment for a {protocol} member"
        consumer.poll(0.1)
    sampler.member_in = True
    stay = time.monotonic() + 2
    while time.monotonic() < stay:
        consumer.poll(0.1)
    sampler.member_in = False  # before its own commit, which the sampler may then see
    try:
        consumer.commit(asynchronous=False)
    except KafkaException as exc:  # it read nothing in its two seconds: nothing to commit
        if exc.args[0].code() != KafkaError._NO_OFFSET:
            raise
    consumer.close()


def test_a_group_flipping_in_and_out_on_the_target_is_never_written_into_nor_rewound(
    primary: Cluster, backup: Cluster, tmp_path: Path
) -> None:
    topic = create_topic(primary, f"live-{uuid.uuid4().hex[:8]}", partitions=PARTITIONS)
    remote = f"primary.{topic}"
    group = f"live-app-{uuid.uuid4().hex[:6]}"
    props = write_properties(
        tmp_path,
        primary.bootstrap_servers,
        backup.bootstrap_servers,
        topic,
        f"primary->backup.groups = {group}\nsync.group.offsets.enabled = true\n"
        "sync.group.offsets.interval.seconds = 1\nemit.checkpoints.interval.seconds = 1\n"
        "refresh.groups.interval.seconds = 1\n",
    )
    load = ContinuousProducer(
        primary, topic, rate=200, limit=10**9, seconds=3600, partitions=PARTITIONS
    )
    stop = threading.Event()
    source = threading.Thread(target=_source_group, args=(primary, topic, group, stop), daemon=True)
    sampler = Sampler(backup.bootstrap_servers, group, remote)
    with MirrorProcess(props) as mirror:
        try:
            load.start()
            source.start()
            eventually(
                lambda: count(backup.bootstrap_servers, remote) > 200,
                timeout=180,
                what="records copied",
                log=mirror.log,
            )
            eventually(
                lambda: len(sampler.offsets()) == PARTITIONS,
                timeout=120,
                what="the group synced to the target",
                log=mirror.log,
            )
            sampler.start()
            for protocol in ("classic", "consumer"):
                for _ in range(FLIPS):
                    _flip(backup, remote, group, protocol, sampler)
                    time.sleep(1.5)  # the mirror syncs the empty group again
        finally:
            sampler.stop()
            stop.set()
            load.stop()
        log_text = mirror.log()
        assert mirror.stop() == 0

    samples = sampler.samples
    assert len(samples) > 100, len(samples)
    written = 0
    for (_, was_in, before), (_, is_in, after) in itertools.pairwise(samples):
        for p, offset in after.items():
            old = before.get(p, -1)
            assert offset >= old, f"partition {p} went back from {old} to {offset}"
            if offset != old:
                assert not (was_in and is_in), f"partition {p} written while a member was in"
                written += 1
    # The sync went on between the flips: the source group moved, and so did the target's.
    assert written > FLIPS, written
    assert "Traceback" not in log_text, log_text[-4000:]
    log.info(
        "group flips: %d samples, %d changes, none backwards or into a live group",
        len(samples),
        written,
    )
