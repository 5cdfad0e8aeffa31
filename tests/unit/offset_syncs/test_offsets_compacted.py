"""Exact translation on compacted source topics: upstream offsets with gaps, groups far behind.

A compacted partition keeps one record here and there: every surviving record is its own copy
run, so the writer's syncs alternate run-of-one and hop. The mirror below copies such a
partition in batches through the real emitter (OffsetSyncEmitter.syncs, headers through their
bytes) into the real OffsetTranslator, and keeps the truth (the downstream offset of every
copied record), so each translation is checked by counting: a group committed at c has read
the records upstream of c; resuming at D it re-reads those copied at or after D and skips
those at or after c copied before D.
"""

from __future__ import annotations

import json
import random
from bisect import bisect_left
from dataclasses import dataclass, field
from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mm2.offset_syncs.emitter import OffsetSyncEmitter
from mm2.offset_syncs.exact_index import ExactIndex, decode_prev_sync, encode_prev_sync
from mm2.offset_syncs.reverse import ReverseTranslator
from mm2.offset_syncs.sync_trail import offset_runs
from mm2.offset_syncs.translator import OffsetTranslator
from mm2.records import OffsetSync, TopicPartition

TP = TopicPartition("compacted", 0)
RECORDS = 100_000


@dataclass
class Copied:
    """What a copy task committed of one partition (emitter.CopiedRuns)."""

    topic: str
    partition: int
    runs: list[tuple[int, int, int]]


@dataclass
class Mirror:
    """A source partition copied in batches; `markers`: a transaction marker follows each
    batch downstream (exactly-once), so downstream offsets jump between batches."""

    ups: list[int]  # upstream offset of every copied record
    downs: list[int] = field(default_factory=list)  # where each landed
    syncs: list[tuple[OffsetSync, bytes | None]] = field(default_factory=list)

    def copy(self, batches: list[int], *, markers: bool = False, lag: int = 100) -> None:
        emitter = OffsetSyncEmitter("mm2-offset-syncs.target.internal", None, lag)
        at, down = 0, 0
        for size in [*batches, len(self.ups)]:
            ups = self.ups[at : at + size]
            downs = list(range(down, down + len(ups)))
            at, down = at + len(ups), down + len(ups) + (1 if markers and ups else 0)
            self.downs.extend(downs)
            for sync, prev in emitter.syncs(
                [Copied(TP.topic, TP.partition, offset_runs(ups, downs))]
            ):
                self.syncs.append((sync, None if prev is None else encode_prev_sync(prev)))

    def translator(self) -> OffsetTranslator:
        t = OffsetTranslator()
        for sync, header in self.syncs:
            t.handle(sync, decode_prev_sync(header))
        t.mark_read_to_end()
        return t

    def read_back(self, downstream: int, upstream: int) -> bool:
        """Whether a group committed at `downstream` that resumes upstream at `upstream` reads
        on from exactly where it stopped: the records below `upstream` are the ones copied
        below `downstream`."""
        return bisect_left(self.ups, upstream) == bisect_left(self.downs, downstream)

    def misses(self, committed: int, downstream: int) -> tuple[int, int]:
        """(re-read, skipped) for a group committed upstream at `committed` resuming at
        `downstream`: the offsets of both logs ascend together, so both are counts."""
        read = bisect_left(self.ups, committed)  # records the group has read
        before = bisect_left(self.downs, downstream)  # copies before where it resumes
        return max(0, read - before), max(0, before - read)


def compacted(n: int, seed: int, *, start: int = 0, max_gap: int = 12) -> list[int]:
    """`n` surviving offsets from `start` on, at random gaps (1 = neighbours survived)."""
    rnd = random.Random(seed)
    offsets, at = [], start
    for _ in range(n):
        offsets.append(at)
        at += rnd.choice((1, 1, rnd.randint(2, max_gap)))
    return offsets


def batches(seed: int, n: int) -> list[int]:
    rnd = random.Random(seed)
    return [rnd.randint(1, 2_000) for _ in range(n // 1_000)]


@cache
def mirrored(markers: bool) -> Mirror:
    mirror = Mirror(compacted(RECORDS, seed=22, start=5))
    mirror.copy(batches(3, RECORDS), markers=markers)
    return mirror


def sample(mirror: Mirror, size: int, seed: int) -> list[int]:
    first, last = mirror.ups[0], mirror.ups[-1]
    rnd = random.Random(seed)
    return [first, last, last + 1, *(rnd.randint(first, last + 1) for _ in range(size))]


@pytest.mark.parametrize("markers", [False, True], ids=["plain", "exactly-once"])
def test_every_sampled_offset_of_a_compacted_partition_translates_exactly(
    markers: bool,
) -> None:
    mirror = mirrored(markers)
    t = mirror.translator()
    for c in sample(mirror, 10_000, seed=7):
        tr = t.translate(TP, c)
        assert tr is not None and tr.exact and tr.rereads_at_most == 0, (c, tr)
        assert mirror.misses(c, tr.downstream) == (0, 0), (c, tr)
    # A 100,000-record compacted partition costs about one stored offset per record.
    assert t.exact.stored_offsets(TP) < 1.1 * RECORDS


@pytest.mark.parametrize("behind", [0, 1_000, 100_000])
@pytest.mark.parametrize("markers", [False, True], ids=["plain", "exactly-once"])
def test_lagging_groups_translate_exactly(markers: bool, behind: int) -> None:
    mirror = mirrored(markers)
    t = mirror.translator()
    n = len(mirror.ups)
    # A group that read all but the last `behind` records committed one past the last it read
    # (an offset compaction may have removed), or at the first record when it read none.
    committed = mirror.ups[n - behind - 1] + 1 if behind < n else mirror.ups[0]
    tr = t.translate(TP, committed)
    assert tr is not None and tr.exact and tr.rereads_at_most == 0, tr
    assert mirror.misses(committed, tr.downstream) == (0, 0)
    assert len(mirror.downs) - bisect_left(mirror.downs, tr.downstream) == behind


def test_reverse_translation_of_a_compacted_partition_is_exact() -> None:
    mirror = mirrored(True)
    r = ReverseTranslator()
    for sync, header in mirror.syncs:
        r.handle(sync, decode_prev_sync(header))
    rnd = random.Random(11)
    last = mirror.downs[-1]
    for d in [0, last, *(rnd.randint(0, last) for _ in range(10_000))]:
        tr = r.translate(TP, d)
        assert tr is not None and tr.exact and mirror.read_back(d, tr.upstream), (d, tr)


def test_json_round_trip_is_small_and_translates_the_same() -> None:
    mirror = mirrored(True)
    before = mirror.translator()
    text = json.dumps(before.to_json())
    after = OffsetTranslator.from_json(json.loads(text))
    after.mark_read_to_end()
    assert after.exact.segments(TP) == before.exact.segments(TP)
    for c in sample(mirror, 2_000, seed=5):
        assert after.translate(TP, c) == before.translate(TP, c), c
    assert len(text) < 2 * RECORDS  # base64 of one byte per record, and the Apache syncs


def test_memory_stays_within_the_budget_and_the_newest_records_stay_exact() -> None:
    mirror = mirrored(False)
    t = OffsetTranslator()
    index = t.exact = ExactIndex(max_offsets=20_000)
    for sync, header in mirror.syncs:
        t.handle(sync, decode_prev_sync(header))
        assert index.stored_offsets(TP) <= 20_000
    assert index.stored_offsets(TP) > 18_000  # drops go a small segment at a time
    t.mark_read_to_end()
    recent = mirror.ups[-15_000]
    for c in range(recent, mirror.ups[-1] + 1, 7):
        tr = t.translate(TP, c)
        assert tr is not None and tr.exact and mirror.misses(c, tr.downstream) == (0, 0), c
    assert index.translate(TP, mirror.ups[1]) is None  # dropped: the oldest go first


def test_runs_stay_two_points_however_long() -> None:
    clean = Mirror(list(range(1_000_000)))
    clean.copy(batches(4, 1_000_000), markers=True, lag=100)
    index = clean.translator().exact
    (segment,) = index.segments(TP)
    # Runs separated by markers: a point at each end of each batch's run.
    assert segment.u1 == 0 and segment.u2 == 999_999
    # Per batch: two points and two marks (its run, and the jump over its marker).
    assert index.stored_offsets(TP) < 6 * (len(batches(4, 1_000_000)) + 1) + 64
    plain = Mirror(list(range(1_000_000)))
    plain.copy(batches(4, 1_000_000), lag=100)
    index = plain.translator().exact
    assert [s.points() for s in index.segments(TP)] == [[(0, 0), (999_999, 999_999)]]


def test_old_snapshots_still_load() -> None:
    old = {
        "store": [{"topic": TP.topic, "partition": 0, "syncs": [[180, 270, 64]]}],
        "exact": [
            {
                "topic": TP.topic,
                "partition": 0,
                "last": [180, 270],
                "segments": [
                    [100, 200, 150, 250, 0],
                    [150, 250, 160, 251, 1],
                    [170, 260, 180, 270, 0],
                ],
            }
        ],
    }
    t = OffsetTranslator.from_json(json.loads(json.dumps(old)))
    t.mark_read_to_end()
    assert len(t.exact.segments(TP)) == 2  # the run and the hop touching it merged
    assert t.exact.last_sync(TP) == (180, 270)
    expected = {100: 200, 120: 220, 150: 250, 155: 251, 160: 251, 170: 260, 175: 265, 180: 270}
    assert {c: t.exact.translate(TP, c) for c in expected} == expected
    assert t.exact.translate(TP, 165) is None  # between the segments: not proven
    gap = t.translate(TP, 165)
    assert gap is not None and (gap.downstream, gap.exact, gap.rereads_at_most) == (252, False, 4)


@st.composite
def gappy_logs(draw: st.DrawFn) -> tuple[list[int], list[int], list[int]]:
    """Copied records (upstream, downstream) with gaps on either side, and batch sizes."""
    steps = draw(st.lists(st.tuples(st.integers(1, 4), st.integers(1, 3)), max_size=150))
    ups, downs, u, d = [], [], draw(st.integers(0, 3)), 0
    for du, dd in steps:
        ups.append(u)
        downs.append(d)
        u, d = u + du, d + dd
    sizes = draw(st.lists(st.integers(1, 20), max_size=30))
    return ups, downs, sizes


@settings(max_examples=300, deadline=None)
@given(gappy_logs(), st.sampled_from([64, 200, 1_000_000]), st.integers(1, 6))
def test_small_segments_and_budgets_never_skip_and_are_exact_where_proven(
    log: tuple[list[int], list[int], list[int]], budget: int, lag: int
) -> None:
    ups, downs, sizes = log
    emitter = OffsetSyncEmitter("syncs", None, lag)
    t = OffsetTranslator()
    t.exact = ExactIndex(max_offsets=budget)
    at = 0
    for size in [*sizes, len(ups)]:
        batch = slice(at, at + size)
        runs = offset_runs(ups[batch], downs[batch])
        at += size
        for sync, prev in emitter.syncs([Copied(TP.topic, TP.partition, runs)]):
            t.handle(sync, prev)
    t.mark_read_to_end()
    if not ups:
        return
    mirror = Mirror(ups, downs)
    for c in range(ups[0], ups[-1] + 2):
        tr = t.translate(TP, c)
        assert tr is not None, c
        if tr.downstream < 0:  # older than anything kept (small budgets only)
            assert budget < 1_000_000, c
            continue
        rereads, skipped = mirror.misses(c, tr.downstream)
        assert skipped == 0 and rereads <= tr.rereads_at_most, (c, tr)
        if t.exact.translate(TP, c) is not None:
            assert tr.exact and rereads == 0, (c, tr)
    again = ExactIndex.from_json(json.loads(json.dumps(t.exact.to_json())), max_offsets=budget)
    assert again.segments(TP) == t.exact.segments(TP)
    assert t.exact.stored_offsets(TP) <= budget or len(t.exact.segments(TP)) == 1
