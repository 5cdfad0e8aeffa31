"""Failover and failback of consumer groups across a real mirror (connect-mirror-maker).

One mirror for the module copies `<prefix>-orders` (2 partitions, several bursts) and
`<prefix>-compacted` (a compacted topic whose offsets have gaps) from primary to backup. Groups
commit on primary; the plan is applied to backup, and a consumer of the group there must read
every remaining record once: nothing lost, nothing re-read.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as KTP
from confluent_kafka.cimpl import NewTopic

from mm2.client import MirrorClient
from mm2.client.failover import (
    apply_failover,
    plan_failover,
    target_group_admin,
    translate_all_groups,
)
from mm2.client.plan import FailoverError
from mm2.config import MirrorMakerConfig, load
from mm2.kafka.take import take
from mm2.policies.replication import DefaultReplicationPolicy
from mm2.records import Checkpoint, OffsetAndMetadata, TopicPartition
from tests.support import kafka
from tests.support.kafka import Cluster, admin_client, commit_group, count, last_values
from tests.support.mirror import MirrorProcess, write_properties
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

PER_PARTITION = 300  # orders records per partition in the first burst, again in the second


def create_topic(
    cluster: Cluster, name: str, *, partitions: int = 1, config: dict[str, str] | None = None
) -> None:
    admin = admin_client(cluster.client_config())
    new = NewTopic(name, num_partitions=partitions, replication_factor=1, config=config or {})
    admin.create_topics([new], operation_timeout=30)[name].result(timeout=60)


@dataclass
class World:
    primary: Cluster
    backup: Cluster
    config: MirrorMakerConfig
    orders: str
    compacted: str
    properties: Path


def produce(bootstrap: str, topic: str, partitions: int, start: int, n: int) -> None:
    records = (
        (p, f"k{i}".encode(), f"{p}:{i}".encode())
        for p in range(partitions)
        for i in range(start, start + n)
    )
    kafka.produce(bootstrap, topic, records, config={"linger.ms": 5}, flush_timeout=30)


def read_from(bootstrap: str, topic: str, partition: int, offset: int) -> list[tuple[int, bytes]]:
    """(offset, value) of every record from `offset` to the high watermark."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "mm2-test-failover-reader",
            "enable.auto.commit": False,
        }
    )
    try:
        _, high = consumer.get_watermark_offsets(KTP(topic, partition), timeout=10)
        out: list[tuple[int, bytes]] = []
        if offset >= high:
            return out
        consumer.assign([KTP(topic, partition, offset)])
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            for m in take(consumer, 1000, 0.5):
                if not m.error():
                    out.append((m.offset() or 0, m.value() or b""))
            if consumer.position([KTP(topic, partition)])[0].offset >= high:
                break
        return out
    finally:
        consumer.close()


def compacted_with_gaps(cluster: Cluster, topic: str) -> None:
    """A compacted topic whose cleaner has run: offsets of overwritten keys are gone."""
    create_topic(
        cluster,
        topic,
        config={
            "cleanup.policy": "compact",
            "segment.ms": "100",
            "min.cleanable.dirty.ratio": "0.001",
        },
    )
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    for burst in range(4):
        for i in range(20):
            key = f"k{i % 7}" if i % 2 else f"u{burst}-{i}"  # overwritten keys leave gaps
            producer.produce(topic, f"v{burst}-{i}".encode(), key.encode())
        producer.flush(10)
        time.sleep(0.3)  # segment.ms passed: the next burst rolls a new segment
    producer.produce(topic, b"last", b"last")
    producer.flush(10)

    def compacted() -> bool:
        return len(read_from(cluster.bootstrap_servers, topic, 0, 0)) < 81

    eventually(compacted, timeout=120, what=f"the log cleaner to compact {topic}")


@pytest.fixture(scope="module")
def world(
    primary: Cluster, backup: Cluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[World]:
    prefix = f"fo-{uuid.uuid4().hex[:8]}"
    orders, compacted = f"{prefix}-orders", f"{prefix}-compacted"
    create_topic(primary, orders, partitions=2)
    produce(primary.bootstrap_servers, orders, 2, 0, PER_PARTITION)
    compacted_with_gaps(primary, compacted)
    directory = tmp_path_factory.mktemp("failover")
    props = write_properties(
        directory,
        primary.bootstrap_servers,
        backup.bootstrap_servers,
        f"{prefix}-.*",
        "pipeline.max.records.per.partition = 70\n",
    )
    with MirrorProcess(props) as mirror:

        def caught_up(topic: str) -> None:
            tails = last_values(primary.bootstrap_servers, topic)
            remote = f"primary.{topic}"
            eventually(
                lambda: last_values(backup.bootstrap_servers, remote) == tails,
                timeout=240,
                what=remote,
                log=mirror.log,
            )

        caught_up(orders)
        caught_up(compacted)
        # A second burst while the mirror runs: more runs, more syncs.
        produce(primary.bootstrap_servers, orders, 2, PER_PARTITION, PER_PARTITION)
        caught_up(orders)
        eventually(
            lambda: count(backup.bootstrap_servers, "primary.heartbeats") > 0,
            timeout=60,
            what="primary.heartbeats",
            log=mirror.log,
        )
        yield World(primary, backup, load(str(props)), orders, compacted, props)


def consume_as_group(cluster: Cluster, group: str, topic: str) -> list[bytes]:
    """A real member of `group` subscribed to `topic`: reads from the group's commits to the
    end of every partition (auto.offset.reset=latest, so a missing commit reads nothing)."""
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": group,
            "auto.offset.reset": "latest",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.subscribe([topic])
        metadata = consumer.list_topics(topic, timeout=10).topics[topic]
        highs = {
            p: consumer.get_watermark_offsets(KTP(topic, p), timeout=10)[1]
            for p in metadata.partitions
        }
        values: list[bytes] = []
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            values += [m.value() or b"" for m in take(consumer, 500, 0.5) if not m.error()]
            assigned = consumer.assignment()
            if len(assigned) == len(highs):
                positions = consumer.position(assigned)
                if all(tp.offset >= highs[tp.partition] for tp in positions):
                    break
        consumer.commit(asynchronous=False)
        return values
    finally:
        consumer.close()


def test_failover_of_a_contiguous_topic_loses_nothing_and_rereads_nothing(world: World) -> None:
    group = f"fo-{uuid.uuid4().hex}"
    commits = {(world.orders, 0): 120, (world.orders, 1): 433}
    commit_group(world.primary.bootstrap_servers, group, commits)
    flow = world.config.flow("primary", "backup")

    plan = plan_failover(flow, group)
    assert plan.basis == "offset syncs" and len(plan.moves) == 2
    assert all(m.exact and m.rereads_at_most == 0 for m in plan.moves), plan
    assert {m.target for m in plan.moves} == {
        TopicPartition(f"primary.{world.orders}", 0),
        TopicPartition(f"primary.{world.orders}", 1),
    }
    applied = apply_failover(plan, target_group_admin(flow))
    assert len(applied.committed) == 2 and not applied.kept

    got = consume_as_group(world.backup, group, f"primary.{world.orders}")
    expected = [
        f"{p}:{i}".encode() for (_, p), c in commits.items() for i in range(c, 2 * PER_PARTITION)
    ]
    assert len(got) == len(expected)  # nothing re-read
    assert sorted(got) == sorted(expected)  # nothing lost


def test_lagging_group_far_behind_the_head_translates_exactly(world: World) -> None:
    group = f"fo-lag-{uuid.uuid4().hex}"
    commit_group(
        world.primary.bootstrap_servers, group, {(world.orders, 0): 3, (world.orders, 1): 0}
    )
    flow = world.config.flow("primary", "backup")
    plan = plan_failover(flow, group)
    assert all(m.exact and m.rereads_at_most == 0 for m in plan.moves), plan
    apply_failover(plan, target_group_admin(flow))
    for move in plan.moves:
        assert move.target is not None and move.target_offset is not None
        source = read_from(
            world.primary.bootstrap_servers, world.orders, move.source.partition, move.source_offset
        )
        target = read_from(
            world.backup.bootstrap_servers,
            move.target.topic,
            move.target.partition,
            move.target_offset,
        )
        assert [v for _, v in target] == [v for _, v in source]


def origin(value: bytes) -> int:
    """The source offset `compacted_with_gaps` gave a value: burst * 20 + i, then `last`."""
    if value == b"last":
        return 80
    burst, i = value.decode().removeprefix("v").split("-")
    return int(burst) * 20 + int(i)


def key_of(offset: int) -> str:
    """The key `compacted_with_gaps` gave the record at a source offset."""
    if offset == 80:
        return "last"
    burst, i = divmod(offset, 20)
    return f"k{i % 7}" if i % 2 else f"u{burst}-{i}"


def test_compacted_source_with_gaps_skips_nothing(world: World) -> None:
    source = read_from(world.primary.bootstrap_servers, world.compacted, 0, 0)
    assert all(origin(v) == o for o, v in source)
    present = [o for o, _ in source]
    gaps = sorted(set(range(present[0], present[-1])) - set(present))
    assert gaps, "the cleaner left no gap"
    flow = world.config.flow("primary", "backup")
    # A commit on a gap, on a record right after one, and at the start.
    for at in (gaps[0], gaps[-1] + 1, present[0]):
        group = f"fo-gap-{uuid.uuid4().hex}"
        commit_group(world.primary.bootstrap_servers, group, {(world.compacted, 0): at})
        plan = plan_failover(flow, group)
        (move,) = plan.moves
        assert move.exact and move.rereads_at_most == 0 and move.target_offset is not None, move
        apply_failover(plan, target_group_admin(flow))
        got = [
            origin(v) for v in consume_as_group(world.backup, group, f"primary.{world.compacted}")
        ]
        # The cleaner may compact the source further after the mirror copied it, so the
        # target can hold records the source has since dropped: compare by source offset.
        assert got == sorted(set(got)), (at, got)  # in order, nothing read twice
        assert all(o >= at for o in got), (at, got)  # nothing before the commit re-read
        # Nothing skipped: each source record from the commit on was read, or (the target's
        # own cleaner having run) a later record with its key was.
        latest = {key_of(o): o for o in got}
        missed = [
            o for o, _ in source if o >= at and o not in got and latest.get(key_of(o), -1) < o
        ]
        assert not missed, (at, got)


def test_failover_is_refused_while_the_group_is_active_on_the_target(world: World) -> None:
    group = f"fo-busy-{uuid.uuid4().hex}"
    commit_group(world.primary.bootstrap_servers, group, {(world.orders, 0): 10})
    flow = world.config.flow("primary", "backup")
    plan = plan_failover(flow, group)
    member = Consumer({"bootstrap.servers": world.backup.bootstrap_servers, "group.id": group})
    try:
        member.subscribe([f"primary.{world.orders}"])
        eventually(
            lambda: bool(member.consume(1, 0.5) or member.assignment()),
            timeout=60,
            what="the member's assignment",
        )
        with pytest.raises(FailoverError) as refused:
            apply_failover(plan, target_group_admin(flow))
        message = str(refused.value)
        assert group in message and "Stable" in message and "1 member" in message
    finally:
        member.close()
    admin = target_group_admin(flow)
    assert admin.committed_offsets([group])[group] == {}  # nothing was written


def test_target_commit_ahead_is_kept_unless_forced(world: World) -> None:
    group = f"fo-ahead-{uuid.uuid4().hex}"
    remote = f"primary.{world.orders}"
    commit_group(world.primary.bootstrap_servers, group, {(world.orders, 0): 50})
    commit_group(world.backup.bootstrap_servers, group, {(remote, 0): 400})
    flow = world.config.flow("primary", "backup")
    plan = plan_failover(flow, group)
    assert plan.moves[0].current_target_offset == 400
    applied = apply_failover(plan, target_group_admin(flow))
    assert applied.kept == {TopicPartition(remote, 0): (400, plan.moves[0].target_offset)}
    admin = target_group_admin(flow)
    assert admin.committed_offsets([group])[group][TopicPartition(remote, 0)].offset == 400
    apply_failover(plan, admin, force=True)
    moved = admin.committed_offsets([group])[group][TopicPartition(remote, 0)].offset
    assert moved == plan.moves[0].target_offset


def test_failback_returns_the_group_to_primary_without_skipping(world: World) -> None:
    group = f"fo-back-{uuid.uuid4().hex}"
    remote = f"primary.{world.orders}"
    commit_group(
        world.primary.bootstrap_servers, group, {(world.orders, 0): 0, (world.orders, 1): 0}
    )
    there = world.config.flow("primary", "backup")
    apply_failover(plan_failover(there, group), target_group_admin(there))
    # The group runs on backup for a while: it reads part of the remote topic and commits.
    read_there = {0: 250, 1: 512}
    commit_group(
        world.backup.bootstrap_servers, group, {(remote, p): d for p, d in read_there.items()}
    )

    back = world.config.flow("backup", "primary")
    plan = plan_failover(back, group, reverse_flow=there, failback=True)
    assert plan.kind == "failback" and plan.target == "primary"
    assert {m.target for m in plan.moves} == {
        TopicPartition(world.orders, 0),
        TopicPartition(world.orders, 1),
    }
    assert all(m.exact and m.rereads_at_most == 0 for m in plan.moves), plan
    apply_failover(plan, target_group_admin(back))
    got = consume_as_group(world.primary, group, world.orders)
    # Every record the group had not read on backup, once.
    unread = [
        v
        for p, d in read_there.items()
        for _, v in read_from(world.backup.bootstrap_servers, remote, p, d)
    ]
    assert sorted(got) == sorted(unread) and len(got) == len(unread)


def test_source_down_falls_back_to_checkpoints_and_says_so(world: World, tmp_path: Path) -> None:
    lost = f"dr{uuid.uuid4().hex[:8]}"
    group = f"fo-dr-{uuid.uuid4().hex}"
    props = tmp_path / "mm2.properties"
    props.write_text(
        f"clusters = {lost}, backup\n{lost}.bootstrap.servers = 127.0.0.1:1\n"
        f"backup.bootstrap.servers = {world.backup.bootstrap_servers}\n"
        f"{lost}->backup.enabled = true\n",
        encoding="utf-8",
    )
    policy = DefaultReplicationPolicy()
    topic = policy.checkpoints_topic(lost)
    create_topic(world.backup, topic)
    create_topic(world.backup, f"{lost}.orders")  # what the mirror made before the disaster
    producer = Producer({"bootstrap.servers": world.backup.bootstrap_servers})
    for cp in (
        Checkpoint(group, f"{lost}.orders", 0, 10, 7),
        Checkpoint(group, f"{lost}.orders", 0, 20, 17, "meta"),
        Checkpoint("someone-else", f"{lost}.orders", 0, 30, 27),
    ):
        producer.produce(topic, cp.to_value_bytes(), cp.to_key_bytes())
    producer.produce(topic, b"\x00\x01", b"garbage")  # malformed: skipped
    producer.flush(10)

    client = MirrorClient(world.backup.client_config(), policy)
    assert client.remote_consumer_offsets(group, lost) == {
        TopicPartition(f"{lost}.orders", 0): OffsetAndMetadata(17, "meta")
    }
    assert topic in client.checkpoint_topics()

    flow = load(str(props)).flow(lost, "backup")
    plan = plan_failover(flow, group, timeout=3)
    assert plan.basis == "checkpoints"
    assert any(lost in n and "127.0.0.1:1" in n for n in plan.notes), plan.notes
    (move,) = plan.moves
    assert (move.source, move.source_offset) == (TopicPartition("orders", 0), 20)
    assert (move.target_offset, move.exact, move.rereads_at_most) == (17, False, None)
    apply_failover(plan, target_group_admin(flow))
    admin = target_group_admin(flow)
    assert admin.committed_offsets([group])[group] == {
        TopicPartition(f"{lost}.orders", 0): OffsetAndMetadata(17, "meta")
    }


def test_mirror_client_sees_the_topology(world: World) -> None:
    client = MirrorClient(world.backup.client_config(), DefaultReplicationPolicy())
    assert client.replication_hops("primary") == 1
    assert client.replication_hops(f"nowhere-{uuid.uuid4().hex}") == -1
    assert "primary" in client.upstream_clusters()
    assert "primary.heartbeats" in client.heartbeat_topics()
    assert {f"primary.{world.orders}", f"primary.{world.compacted}"} <= client.remote_topics(
        "primary"
    )


def test_checkpoints_written_by_the_mirror_agree_with_the_live_plan(world: World) -> None:
    group = f"fo-cp-{uuid.uuid4().hex}"
    commit_group(
        world.primary.bootstrap_servers, group, {(world.orders, 0): 77, (world.orders, 1): 301}
    )
    flow = world.config.flow("primary", "backup")
    live = plan_failover(flow, group)
    client = MirrorClient(world.backup.client_config(), DefaultReplicationPolicy())
    eventually(
        lambda: len(client.remote_consumer_offsets(group, "primary")) == 2,
        timeout=90,
        what=f"checkpoints of {group}",
    )
    from_checkpoints = plan_failover(flow, group, from_checkpoints=True)
    assert from_checkpoints.basis == "checkpoints"
    assert {(m.target, m.target_offset) for m in from_checkpoints.moves} == {
        (m.target, m.target_offset) for m in live.moves
    }


def test_every_group_is_translated_in_one_pass_as_each_alone(world: World) -> None:
    """KIP-1239's batch: every group the flow mirrors in one call (CLI and library), each
    translated as plan_failover translates it alone; mm2's own groups are not among them."""
    groups = {
        f"fo-all-{i}-{uuid.uuid4().hex[:6]}": {
            (world.orders, 0): 10 * i + 5,
            (world.orders, 1): 7 * i,
        }
        for i in range(1, 4)
    }
    for group, offsets in groups.items():
        commit_group(world.primary.bootstrap_servers, group, offsets)
    flow = world.config.flow("primary", "backup")
    plans = {p.group: p for p in translate_all_groups(flow)}
    assert set(groups) <= set(plans), sorted(plans)
    assert not [g for g in plans if g.startswith("mm2-leader.")], sorted(plans)  # the election's
    for group in groups:
        alone = plan_failover(flow, group)
        assert plans[group].moves == alone.moves, group
        assert all(m.exact for m in plans[group].moves), plans[group]
    command = [
        sys.executable,
        "-m",
        "mm2.cli.tools",
        "translate-offsets",
        "--config",
        str(world.properties),
        "--source",
        "primary",
        "--target",
        "backup",
        "--all-groups",
        "--json",
    ]
    out = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    printed = {g["group"]: g for g in json.loads(out.stdout)["groups"]}
    for group in groups:
        assert printed[group]["partitions"] == plans[group].to_json()["partitions"]
