"""Share groups mirrored on real Kafka 4.4 brokers.

A source share group acknowledges the first 120 of 300 records and releases the rest. The
mirror sets the target's share group so that a share consumer there starts at the copy of
record 120: none of the acknowledged records is delivered again, none is skipped. Then, while
that consumer is a member on the target, the source group acknowledges everything: the mirror
writes nothing into the live group, which goes on to read every later record exactly once.
The records are read back by confluent-kafka's share consumer; the start offsets by mm2's own
admin, whose requests the broker must accept.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable
from pathlib import Path

import pytest
from confluent_kafka import AcknowledgeType, Consumer, Message, ShareConsumer, TopicPartition

from mm2.share_groups import ShareGroupAdmin
from tests.support.kafka import Cluster, create_topic, produce_numbered
from tests.support.mirror import MirrorProcess, write_properties
from tests.support.waiting import eventually

pytestmark = [pytest.mark.integration]

FIRST, ACKED, MORE = 300, 120, 100


def share_consumer(bootstrap: str, group: str, topic: str, *, explicit: bool) -> ShareConsumer:
    mode = "explicit" if explicit else "implicit"
    consumer = ShareConsumer(
        {"bootstrap.servers": bootstrap, "group.id": group, "share.acknowledgement.mode": mode}
    )
    consumer.subscribe([topic])
    return consumer


def values(batch: Iterable[Message] | None) -> list[tuple[int, bytes]]:
    """(offset, value) of each record of a share consumer's poll."""
    out = []
    for message in batch or []:
        assert message.error() is None, message.error()
        out.append((int(message.offset() or 0), bytes(message.value() or b"")))
    return out


def acknowledge_the_first(bootstrap: str, group: str, topic: str, n: int) -> None:
    """Accept offsets below n and release the rest, in two commits: the broker persists a
    share partition's start offset one write late, so the release makes it store n."""
    consumer = share_consumer(bootstrap, group, topic, explicit=True)
    accepted: set[int] = set()
    deadline = time.monotonic() + 120
    try:
        while len(accepted) < n and time.monotonic() < deadline:
            batch = list(consumer.poll(1.0) or [])
            later = []
            for message in batch:
                assert message.error() is None, message.error()
                offset = int(message.offset() or 0)
                if offset < n:
                    consumer.acknowledge(message)
                    accepted.add(offset)
                else:
                    later.append(message)
            consumer.commit_sync()
            for message in later:
                consumer.acknowledge(message, AcknowledgeType.RELEASE)
            consumer.commit_sync()
    finally:
        consumer.close()
    assert len(accepted) == n, f"the source group accepted {len(accepted)} of {n}"


def offset_of(bootstrap: str, topic: str, value: bytes) -> int:
    """The offset of the record holding `value` in partition 0 of `topic`."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "mm2-test-offset-of",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is not None and message.error() is None and message.value() == value:
                return int(message.offset() or 0)
    finally:
        consumer.close()
    raise AssertionError(f"{value!r} not found in {topic}")


def test_a_share_groups_position_is_set_on_the_target_and_its_members_are_left_alone(
    primary: Cluster, backup: Cluster, tmp_path: Path
) -> None:
    topic = create_topic(primary, f"share-{uuid.uuid4().hex[:8]}")
    remote = f"primary.{topic}"
    group = f"share-group-{uuid.uuid4().hex[:8]}"
    produce_numbered(primary.bootstrap_servers, topic, b"r", FIRST)
    source = ShareGroupAdmin(primary.client_config(), name="primary")
    target = ShareGroupAdmin(backup.client_config(), name="backup")
    # A new share group starts at the end (share.auto.offset.reset=latest): give it offset 0.
    eventually(
        lambda: source.alter_offsets(group, {(topic, 0): 0}),
        timeout=120,
        what="the source share group created at offset 0",
    )
    extra = (
        f"offset.storage.topic = mm2-offsets.{uuid.uuid4().hex[:8]}.internal\n"
        "sync.share.group.offsets.enabled = true\n"
    )
    props = write_properties(
        tmp_path, primary.bootstrap_servers, backup.bootstrap_servers, topic, extra
    )
    try:
        with MirrorProcess(props) as mirror:
            acknowledge_the_first(primary.bootstrap_servers, group, topic, ACKED)
            eventually(
                lambda: source.offsets(group)[(topic, 0)].start == ACKED,
                timeout=120,
                what="the source group's start offset stored",
                log=mirror.log,
            )
            copy_of_first = offset_of(backup.bootstrap_servers, remote, b"r-%d" % ACKED)
            eventually(
                lambda: (
                    target.offsets(group).get((remote, 0), None) is not None
                    and target.offsets(group)[(remote, 0)].start == copy_of_first
                ),
                timeout=120,
                what=f"the target group at {copy_of_first}",
                log=mirror.log,
            )

            # A member on the target: it starts at the copy of record 120.
            member = share_consumer(backup.bootstrap_servers, group, remote, explicit=False)
            got: list[tuple[int, bytes]] = []
            try:
                first = eventually(
                    lambda: values(member.poll(1.0)), timeout=120, what="the first records"
                )
                got += first
                assert got[0][1] == b"r-%d" % ACKED, got[:3]
                # The source group now acknowledges everything; the target's member stays.
                produce_numbered(primary.bootstrap_servers, topic, b"s", MORE)
                everything = share_consumer(primary.bootstrap_servers, group, topic, explicit=True)
                seen: set[bytes] = set()
                try:
                    deadline = time.monotonic() + 120
                    while b"s-%d" % (MORE - 1) not in seen and time.monotonic() < deadline:
                        for message in everything.poll(1.0) or []:
                            everything.acknowledge(message)
                            seen.add(bytes(message.value() or b""))
                        everything.commit_sync()
                        got += values(member.poll(0.1))
                finally:
                    everything.close()
                assert len(seen) == FIRST - ACKED + MORE, len(seen)
                eventually(
                    lambda: "not syncing share group" in mirror.log(),
                    timeout=60,
                    what="the live group left alone",
                    log=mirror.log,
                )
                deadline = time.monotonic() + 120
                while b"s-%d" % (MORE - 1) not in {v for _, v in got}:
                    assert time.monotonic() < deadline, f"the member read {len(got)} records"
                    got += values(member.poll(1.0))
            finally:
                member.close()
            expected = [b"r-%d" % i for i in range(ACKED, FIRST)] + [
                b"s-%d" % i for i in range(MORE)
            ]
            assert [v for _, v in got] == expected, "the live member lost or re-read records"
            # The member left: the group is set to the source group's position (all read).
            last = offset_of(backup.bootstrap_servers, remote, b"s-%d" % (MORE - 1))
            eventually(
                lambda: target.offsets(group)[(remote, 0)].start > last,
                timeout=120,
                what="the target group past the last record",
                log=mirror.log,
            )
    finally:
        source.close()
        target.close()
