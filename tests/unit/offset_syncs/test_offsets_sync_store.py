"""OffsetSyncStore translation against Apache's OffsetSyncStoreTest vectors (reference §4.4)."""

from __future__ import annotations

import random
from collections.abc import Iterable

import pytest

from mm2.offset_syncs.sync_store import SYNCS_PER_PARTITION, OffsetSyncStore
from mm2.records import OffsetSync, TopicPartition

TP = TopicPartition("topic1", 2)


def sync(store: OffsetSyncStore, up: int, down: int, tp: TopicPartition = TP) -> None:
    store.handle_record(OffsetSync(tp.topic, tp.partition, up, down))


def translate(store: OffsetSyncStore, offset: int, tp: TopicPartition = TP) -> int | None:
    return store.translate_downstream(tp, offset)


def java_long(value: int) -> int:
    return (value + (1 << 63)) % (1 << 64) - (1 << 63)


def assert_sparse_sync_invariant(store: OffsetSyncStore, tp: TopicPartition = TP) -> None:
    syncs = store.syncs(tp)
    assert syncs is not None and len(syncs) == SYNCS_PER_PARTITION
    for j in range(SYNCS_PER_PARTITION):
        for i in range(j):
            i_up, j_up = syncs[i].upstream_offset, syncs[j].upstream_offset
            if i_up == j_up:
                continue
            lower = java_long(j_up + (1 << max(i - 2, 0)))
            if lower < 0:
                continue
            assert i_up >= lower, f"invariant C broken: syncs[{i}]={i_up} syncs[{j}]={j_up}"
            upper = java_long(j_up + java_long(1 << j) - (1 << i))
            if upper < 0:
                continue
            assert i_up <= upper, f"invariant B broken: syncs[{i}]={i_up} syncs[{j}]={j_up}"


def assert_sparse_sync(store: OffsetSyncStore, sync_offset: int, previous: int) -> None:
    expected_before = -1 if previous == -1 else previous + 1
    assert translate(store, sync_offset - 1) == expected_before, (sync_offset, previous)
    assert translate(store, sync_offset) == sync_offset
    assert translate(store, sync_offset + 1) == sync_offset + 1
    assert translate(store, sync_offset + 2) == sync_offset + 1


def started(*, must_read_to_end: bool = True) -> OffsetSyncStore:
    store = OffsetSyncStore(initialization_must_read_to_end=must_read_to_end)
    store.mark_read_to_end()
    return store


def test_offset_translation() -> None:
    store = started()
    sync(store, 100, 200)
    assert translate(store, 150) == 201, "no dead reckoning: at most +1"
    sync(store, 150, 251)
    assert translate(store, 150) == 251, "exact"
    assert translate(store, 5) == -1, "before every sync"
    sync(store, 200, 10)
    assert translate(store, 200) == 10, "downstream reset"
    sync(store, 20, 20)
    assert translate(store, 20) == 20, "upstream reset"


def test_no_translation_if_store_not_started() -> None:
    store = OffsetSyncStore(initialization_must_read_to_end=True)
    for offset in (0, 100, 200):
        assert translate(store, offset) is None
    sync(store, 100, 200)
    for offset in (0, 100, 200):
        assert translate(store, offset) is None
    store.mark_read_to_end()
    assert store.read_to_end
    assert translate(store, 0) == -1
    assert translate(store, 100) == 200
    assert translate(store, 200) == 201


def test_no_translation_if_no_offset_sync() -> None:
    store = started()
    assert translate(store, 0) is None
    sync(store, 1, 1, TopicPartition("other", 2))
    assert translate(store, 0) is None


def feed(store: OffsetSyncStore, offsets: Iterable[int]) -> None:
    for offset in offsets:
        sync(store, offset, offset)
        assert_sparse_sync_invariant(store)


@pytest.mark.slow
def test_past_offset_translation() -> None:
    store = OffsetSyncStore(initialization_must_read_to_end=True)
    feed(store, range(0, 1001, 10))
    store.mark_read_to_end()
    # Before new syncs arrive, only the last startup sync translates.
    assert_sparse_sync(store, 1000, -1)
    feed(store, range(1010, 10001, 10))
    # Invariant D: the last sync of the initial read is still there.
    assert_sparse_sync(store, 1000, -1)
    pairs = [
        (4840, 1000),
        (6760, 4840),
        (8680, 6760),
        (9160, 8680),
        (9640, 9160),
        (9880, 9640),
        (9940, 9880),
        (9970, 9940),
        (9990, 9970),
        (10000, 9990),
    ]
    for sync_offset, previous in pairs:
        assert_sparse_sync(store, sync_offset, previous)
    # An upstream rewind clears every older sync.
    sync(store, 1500, 11000)
    assert_sparse_sync_invariant(store)
    assert translate(store, 1499) == -1
    assert translate(store, 1500) == 11000
    assert translate(store, 2000) == 11001


@pytest.mark.slow
def test_past_offset_translation_without_initialization_read_to_end() -> None:
    store = OffsetSyncStore(initialization_must_read_to_end=False)
    feed(store, range(0, 1001, 10))
    store.mark_read_to_end()
    assert_sparse_sync(store, 480, 0)
    assert_sparse_sync(store, 720, 480)
    assert_sparse_sync(store, 1000, 990)
    feed(store, range(1010, 10001, 10))
    pairs = [
        (3840, 0),
        (7680, 3840),
        (8640, 7680),
        (9120, 8640),
        (9600, 9120),
        (9840, 9600),
        (9900, 9840),
        (9960, 9900),
        (9990, 9960),
        (10000, 9990),
    ]
    for sync_offset, previous in pairs:
        assert_sparse_sync(store, sync_offset, previous)
    sync(store, 1500, 11000)
    assert_sparse_sync_invariant(store)
    assert translate(store, 1499) == -1
    assert translate(store, 1500) == 11000
    assert translate(store, 2000) == 11001


def test_restart_sparse_store_translates_like_apache() -> None:
    """Store half of MirrorCheckpointTaskTest.testCheckpointsTaskRestartUsesExistingCheckpoints."""
    before = OffsetSyncStore(initialization_must_read_to_end=False)
    feed(before, [100, 200, 300])
    before.mark_read_to_end()
    assert translate(before, 250) == 201
    after = OffsetSyncStore(initialization_must_read_to_end=False)
    feed(after, [175, 275, 375, 475])
    after.mark_read_to_end()
    assert translate(after, 250) == 176
    assert translate(after, 370) == 176
    assert translate(after, 400) == 376


def count_distinct(store: OffsetSyncStore) -> int:
    syncs = store.syncs(TP)
    assert syncs is not None
    return len({id(s) for s in syncs})


def assert_bounded_expirations(first: int, steps: Iterable[int], maximum: int) -> None:
    store = started()
    sync(store, first, first)
    offset, last_count = first, 1
    for step in steps:
        offset += step
        assert offset < 1 << 63, "test is invalid: offset overflowed"
        sync(store, offset, offset)
        syncs = store.syncs(TP)
        assert syncs is not None
        assert syncs[0].upstream_offset == offset, "invariant A"
        assert syncs[-1].upstream_offset == first, "invariant D"
        count = count_distinct(store)
        expired = last_count - count + 1
        assert expired <= maximum, f"expired {expired} > {maximum} after {offset}"
        last_count = count


@pytest.mark.slow
def test_consistently_spaced_syncs() -> None:
    iterations = 100
    max_step = (2**63 - 1) // iterations
    step = 1
    while step < max_step:
        for first in range(30):
            assert_bounded_expirations(first, [step] * iterations, 1)
        step = step * 2 + 1


@pytest.mark.slow
def test_randomly_spaced_syncs() -> None:
    rng = random.Random(0)
    iteration_bits = 10
    iterations = 1 << iteration_bits
    for n in range(1, 64 - iteration_bits):
        maximum_difference = 1 << n
        assert_bounded_expirations(
            0, [rng.randrange(0, maximum_difference) for _ in range(iterations)], n + 2
        )
        lag = 1 << 16
        assert_bounded_expirations(
            0, [rng.randrange(lag, lag + maximum_difference) for _ in range(iterations)], n + 2
        )


def test_dropped_syncs_spacing() -> None:
    rng = random.Random(0)
    lag = 100
    steps = [(2 if rng.random() < 0.5 else 1) * lag for _ in range(10000)]
    assert_bounded_expirations(0, steps, 2)


def test_random_syncs_keep_invariants_and_translate_monotonically() -> None:
    rng = random.Random(7)
    store = started()
    offset = 0
    for _ in range(300):
        offset += rng.randrange(1, 5000)
        sync(store, offset, offset * 2)
        assert_sparse_sync_invariant(store)
    results = [translate(store, o) for o in range(0, offset + 10, 97)]
    numbers = [r for r in results if r is not None]
    assert numbers == sorted(numbers), "fixed state: translation is monotonic in the offset"


def test_must_read_to_end_keeps_only_last_startup_sync() -> None:
    store = OffsetSyncStore(initialization_must_read_to_end=True)
    feed(store, [10, 20, 30])
    syncs = store.syncs(TP)
    assert syncs is not None
    assert {s.upstream_offset for s in syncs} == {30}
