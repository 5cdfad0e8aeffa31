"""Groups parked in offsets compaction removed before the mirror started, on real brokers.

Each partition of the source topic takes 20,010 records: the first 19,010 under 100 keys that
the last 1,000 write again, so the cleaner removes every one of them before the mirror starts
(its first copy, and its oldest offset sync, is of the first record left). Partition 1's first
record left is one offset later than partition 0's. A group committed anywhere in the removed
range reads the first record left at or after its offset next; every translation (the batch
translation, mm2 failover, the checkpoints and the target groups the running mirror syncs)
must resume it at that record's copy, exactly. On a second topic whose log start was moved
past some commits (DeleteRecords), those commits stay refused: a group there is reset by its
own policy, not read on.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, Producer
from confluent_kafka import TopicPartition as KTP

from mm2.client import MirrorClient
from mm2.client.failover import plan_failover, translate_all_groups
from mm2.client.plan import FailoverPlan
from mm2.config import MirrorMakerConfig, load
from tests.support.kafka import (
    Cluster,
    admin_client,
    commit_group,
    create_topic,
    read_topic,
    set_cleaner_backoff,
)
from tests.support.mirror import MirrorProcess, write_properties
from tests.support.waiting import eventually

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(900)]

FIRST = 19_010  # records 0 .. FIRST - 1 are all written again later
RECORDS = 20_010
PARTITIONS = 2
# Commits inside the removed range (and one at FIRST, removed on partition 1 only).
REMOVED = [0, 1, 777, 5_000, 12_345, FIRST - 2, FIRST - 1, FIRST]
TRUNCATED_TO = 10_000  # the log start of the second topic, partition 0
CLEANER_BACKOFF_MS = 1_000  # the source's cleaner looks for work this often (Kafka: 15,000)
NOT_REFUSED = "older than every offset sync kept: cannot translate without guessing"


def key_of(partition: int, i: int) -> bytes:
    """Keys k0..k99 repeat all along; past FIRST every third record has a key of its own,
    starting with the first on partition 0 and the second on partition 1."""
    if i >= FIRST and (i - FIRST) % 3 == partition:
        return b"u%d" % i
    return b"k%d" % (i % 100)


def fill(primary: Cluster, topic: str) -> None:
    """The records, in chunks a little apart: with segment.ms = 100 each chunk starts a new
    segment, so all but the last are the cleaner's to compact."""
    # Idempotent: a retried batch is neither duplicated nor reordered, so offset == i.
    producer = Producer(
        {
            "bootstrap.servers": primary.bootstrap_servers,
            "linger.ms": 20,
            "enable.idempotence": True,
        }
    )
    bounds = [*range(0, FIRST, 1_901), *range(FIRST, RECORDS, 250), RECORDS]
    for start, end in itertools.pairwise(bounds):
        for partition in range(PARTITIONS):
            for i in range(start, end):
                while True:
                    try:
                        producer.produce(
                            topic,
                            b"%d:%d" % (partition, i),
                            key_of(partition, i),
                            partition=partition,
                        )
                        break
                    except BufferError:
                        producer.poll(0.5)
        assert producer.flush(60) == 0
        time.sleep(0.3)


def survivors(primary: Cluster, topic: str) -> dict[int, list[int]]:
    """The offsets the source holds, per partition (each record's value names its offset)."""
    out: dict[int, list[int]] = {}
    for partition, records in read_topic(primary.bootstrap_servers, topic).items():
        assert all(r[2] == b"%d:%d" % (partition, r[0]) for r in records), "offset != value"
        out[partition] = [r[0] for r in records]
    return out


def compacted(primary: Cluster, topic: str) -> dict[int, list[int]]:
    """Wait until the cleaner removed every record below FIRST (and partition 1's FIRST)."""

    def done() -> dict[int, list[int]] | None:
        held = survivors(primary, topic)
        firsts = {p: offsets[0] for p, offsets in held.items() if offsets}
        return held if firsts == {0: FIRST, 1: FIRST + 1} else None

    held = eventually(done, timeout=300, interval=1, what=f"the cleaner to compact {topic}")

    def settled() -> dict[int, list[int]] | None:
        # The cleaner looks for work every CLEANER_BACKOFF_MS (set by `world`); nothing is
        # written any more, so two reads five of those apart that agree mean it has nothing
        # left to remove (the last segment is never cleaned).
        nonlocal held
        time.sleep(5 * CLEANER_BACKOFF_MS / 1000)
        now, held = held, survivors(primary, topic)
        return held if held == now else None

    return eventually(settled, timeout=300, interval=1, what=f"{topic} to settle")


@dataclass
class World:
    prefix: str
    config: MirrorMakerConfig
    properties: Path
    topic: str
    truncated: str
    commits: dict[str, int]  # group -> the offset it committed on every partition of `topic`
    refused: dict[str, int]  # group -> its commit on `truncated` partition 0, below log start
    kept: dict[str, int]  # group -> its commit on `truncated` partition 0, at/after log start


def copies(backup: Cluster, topic: str) -> dict[tuple[int, int], int]:
    """(partition, source offset) -> the target offset of its copy."""
    out: dict[tuple[int, int], int] = {}
    for partition, records in read_topic(backup.bootstrap_servers, f"primary.{topic}").items():
        for offset, _key, value, *_ in records:
            p, i = (value or b"").split(b":")
            assert int(p) == partition
            out[(partition, int(i))] = offset
    return out


def expected(primary: Cluster, backup: Cluster, topic: str, committed: int) -> dict[int, int]:
    """Per partition, the target offset of the copy of the first record the source holds at or
    after `committed`, as both clusters hold them now."""
    held, copied = survivors(primary, topic), copies(backup, topic)
    first = {p: next(o for o in offsets if o >= committed) for p, offsets in held.items()}
    return {p: copied[(p, first[p])] for p in first}


@pytest.fixture(scope="module")
def world(
    primary: Cluster, backup: Cluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[World]:
    prefix = f"rr-{uuid.uuid4().hex[:8]}"
    topic, truncated = f"{prefix}-compacted", f"{prefix}-truncated"
    settings = {
        "segment.ms": "100",
        "min.cleanable.dirty.ratio": "0.01",
        "min.compaction.lag.ms": "0",
        "delete.retention.ms": "100",
    }
    set_cleaner_backoff(primary, CLEANER_BACKOFF_MS)
    try:  # back to Kafka's default before the mirror starts
        create_topic(
            primary, topic, partitions=PARTITIONS, config={**settings, "cleanup.policy": "compact"}
        )
        # compact,delete: DeleteRecords may move its log start (retention never does here).
        create_topic(
            primary,
            truncated,
            partitions=PARTITIONS,
            config={**settings, "cleanup.policy": "compact,delete", "retention.ms": "-1"},
        )
        fill(primary, topic)
        fill(primary, truncated)
        admin = admin_client(primary.client_config())
        deleted = admin.delete_records([KTP(truncated, 0, TRUNCATED_TO)])
        for future in deleted.values():
            future.result(timeout=60)
        held = compacted(primary, topic)
        compacted(primary, truncated)
    finally:
        set_cleaner_backoff(primary, None)
    assert all(len(offsets) < 1_000 for offsets in held.values()), {
        p: len(o) for p, o in held.items()
    }
    commits = {f"{prefix}-g{offset}": offset for offset in REMOVED}
    # Two commits past the removed range: on a record, and in a gap between records.
    gap = next(o for o in range(FIRST, RECORDS) if o not in set(held[0]) | set(held[1]))
    commits[f"{prefix}-g{held[0][5]}"] = held[0][5]
    commits[f"{prefix}-g{gap}"] = gap
    for group, offset in commits.items():
        commit_group(
            primary.bootstrap_servers, group, {(topic, p): offset for p in range(PARTITIONS)}
        )
    refused = {f"{prefix}-t{offset}": offset for offset in (0, 5_000, TRUNCATED_TO - 1)}
    kept = {f"{prefix}-t{offset}": offset for offset in (TRUNCATED_TO, 15_000)}
    for group, offset in {**refused, **kept}.items():
        commit_group(primary.bootstrap_servers, group, {(truncated, 0): offset})
    directory = tmp_path_factory.mktemp("removed-range")
    props = write_properties(
        directory,
        primary.bootstrap_servers,
        backup.bootstrap_servers,
        f"{prefix}-.*",
        f"sync.group.offsets.enabled = true\ngroups = {prefix}-.*\n",
    )
    with MirrorProcess(props) as mirror:
        for name in (topic, truncated):
            last = {p: offsets[-1] for p, offsets in survivors(primary, name).items()}
            eventually(
                lambda name=name, last=last: all(  # type: ignore[misc]
                    (p, o) in copies(backup, name) for p, o in last.items()
                ),
                timeout=300,
                interval=2,
                what=f"primary.{name} caught up",
                log=mirror.log,
            )
        yield World(prefix, load(str(props)), props, topic, truncated, commits, refused, kept)
        assert mirror.stop() == 0, mirror.log()[-3000:]


def moves_of(plan: FailoverPlan) -> dict[tuple[str, int], tuple[int | None, bool, str]]:
    return {
        (m.source.topic, m.source.partition): (m.target_offset, m.exact, m.note) for m in plan.moves
    }


def test_the_batch_translation_and_failover_resume_at_the_copy_of_the_first_record_left(
    primary: Cluster, backup: Cluster, world: World
) -> None:
    flow = world.config.flow("primary", "backup")
    plans = {p.group: p for p in translate_all_groups(flow)}
    wrong = []
    for group, offset in world.commits.items():
        want = expected(primary, backup, world.topic, offset)
        got = moves_of(plans[group])
        for p in range(PARTITIONS):
            target, exact, note = got[(world.topic, p)]
            if (target, exact) != (want[p], True):
                wrong.append((group, p, offset, target, exact, want[p], note))
    assert not wrong, wrong
    # The removed range really was untranslatable from the syncs alone: its notes say so.
    (move,) = [m for m in plans[f"{world.prefix}-g0"].moves if m.source.partition == 0]
    assert "the first record primary holds at or after 0" in move.note, move.note
    for group in (f"{world.prefix}-g{FIRST - 1}", f"{world.prefix}-g{FIRST}"):
        assert plan_failover(flow, group).moves == plans[group].moves, group


def test_mm2_failover_dry_run_says_the_same(
    primary: Cluster, backup: Cluster, world: World
) -> None:
    group = f"{world.prefix}-g{REMOVED[3]}"
    command = [
        sys.executable,
        "-m",
        "mm2.cli.tools",
        "failover",
        "--config",
        str(world.properties),
        "--from",
        "primary",
        "--to",
        "backup",
        "--group",
        group,
        "--dry-run",
        "--json",
    ]
    out = subprocess.run(command, capture_output=True, text=True, timeout=180, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    printed = {p["source_partition"]: p for p in json.loads(out.stdout)["partitions"]}
    want = expected(primary, backup, world.topic, REMOVED[3])
    for p in range(PARTITIONS):
        assert (printed[p]["target_offset"], printed[p]["exact"]) == (want[p], True), printed[p]


def test_commits_below_the_log_start_stay_refused(world: World) -> None:
    flow = world.config.flow("primary", "backup")
    plans = {p.group: p for p in translate_all_groups(flow)}
    for group, offset in world.refused.items():
        (move,) = plans[group].moves
        assert (move.target_offset, move.note) == (None, NOT_REFUSED), (group, offset, move)
    for group, offset in world.kept.items():
        (move,) = plans[group].moves
        assert move.target_offset is not None and move.exact, (group, offset, move)


def test_checkpoints_and_synced_target_groups_are_exact(
    primary: Cluster, backup: Cluster, world: World
) -> None:
    admin = admin_client(backup.client_config())
    wanted = {
        (group, p): offset
        for group, committed in world.commits.items()
        for p, offset in expected(primary, backup, world.topic, committed).items()
    }

    def synced() -> dict[tuple[str, int], int] | None:
        out: dict[tuple[str, int], int] = {}
        for group in world.commits:
            request = [ConsumerGroupTopicPartitions(group)]
            listed = admin.list_consumer_group_offsets(request)[group].result()
            for tp in listed.topic_partitions or []:
                if tp.offset >= 0:
                    out[(group, tp.partition)] = tp.offset
        return out if out == wanted else None

    eventually(synced, timeout=120, interval=2, what="every group synced to its exact offset")
    client = MirrorClient(
        backup.client_config(), world.config.flow("primary", "backup").replication_policy()
    )
    remote = f"primary.{world.topic}"
    for group in world.commits:
        found = client.checkpoints(group, "primary")
        got = {tp.partition: cp.downstream_offset for tp, cp in found.items() if tp.topic == remote}
        assert got == {p: wanted[(group, p)] for p in range(PARTITIONS)}, (group, got)
    # The refused commits get no checkpoint (never a guess), the ones at the log start do.
    for group in world.refused:
        assert not client.checkpoints(group, "primary"), group
    for group in world.kept:
        assert client.checkpoints(group, "primary"), group
