"""OffsetSyncWriter against MirrorSourceTaskTest and OffsetSyncWriterTest (reference §4.2)."""

from __future__ import annotations

import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mm2.offset_syncs import MAX_OUTSTANDING_OFFSET_SYNCS, OffsetSyncWriter, PartitionState
from mm2.records import OffsetSync, TopicPartition

TP = TopicPartition("topic", 0)


def test_offset_sync_golden_vector_lag_50() -> None:
    state = PartitionState(50)
    assert state.update(0, 100), "always emit on the first update"
    assert state.should_sync_offsets
    state.reset()
    assert not state.should_sync_offsets
    steps = [
        ((2, 102), True, "upstream skipped"),
        ((3, 152), False, "no sync"),
        ((4, 153), True, "one past target offset"),
        ((5, 154), False, "no sync"),
        ((6, 203), False, "no sync"),
        ((7, 204), True, "one past target offset"),
        ((2, 206), True, "upstream reset"),
        ((3, 207), False, "no sync"),
        ((4, 3), True, "downstream reset"),
        ((5, 4), False, "no sync"),
    ]
    for (up, down), expected, why in steps:
        assert state.update(up, down) is expected, (up, down, why)
        state.reset()


def test_without_reset_the_flag_sticks() -> None:
    state = PartitionState(50)
    for up, down in [(0, 100), (2, 102), (3, 152), (4, 153), (5, 154), (6, 203), (7, 204)]:
        state.update(up, down)
        state.reset()
    for up, down in [(2, 206), (3, 207), (4, 3), (5, 4)]:
        state.update(up, down)
        state.reset()
    assert state.update(7, 6)
    assert state.update(7, 6)
    assert state.update(8, 7)
    assert state.update(10, 57)
    state.reset()
    assert not state.update(11, 58)
    assert not state.should_sync_offsets


def test_zero_lag_always_syncs() -> None:
    state = PartitionState(0)
    pairs = [(0, 100), (2, 102), (3, 153), (4, 154), (5, 155), (6, 207), (2, 208), (3, 209)]
    for up, down in [*pairs, (4, 3), (5, 4)]:
        assert state.update(up, down), (up, down)
        state.reset()


def test_first_sync_is_pending_next_is_delayed() -> None:
    writer = OffsetSyncWriter(max_offset_lag=1)
    writer.maybe_queue_offset_syncs(TP, 0, 1)
    assert TP not in writer.delayed_offset_syncs()
    assert writer.pending_offset_syncs()[TP] == OffsetSync("topic", 0, 0, 1)
    state = writer.partition_state(TP)
    assert state is not None
    assert state.last_sync_downstream_offset == 1
    writer.maybe_queue_offset_syncs(TP, 1, 2)
    assert writer.delayed_offset_syncs()[TP] == OffsetSync("topic", 0, 1, 2)
    assert state.last_sync_downstream_offset == 1


def test_a_fired_sync_replaces_the_delayed_one() -> None:
    writer = OffsetSyncWriter(max_offset_lag=50)
    writer.maybe_queue_offset_syncs(TP, 0, 100)
    writer.maybe_queue_offset_syncs(TP, 1, 101)
    assert TP in writer.delayed_offset_syncs()
    writer.maybe_queue_offset_syncs(TP, 5, 105)  # upstream skipped: fire now
    assert TP not in writer.delayed_offset_syncs()
    assert writer.pending_offset_syncs() == {TP: OffsetSync("topic", 0, 5, 105)}


def test_promote_moves_latest_delayed_to_pending() -> None:
    writer = OffsetSyncWriter(max_offset_lag=50)
    writer.maybe_queue_offset_syncs(TP, 0, 100)
    writer.maybe_queue_offset_syncs(TP, 1, 101)
    writer.promote_delayed_offset_syncs()
    assert writer.delayed_offset_syncs() == {}
    assert writer.pending_offset_syncs() == {TP: OffsetSync("topic", 0, 1, 101)}


def test_in_flight_bound_holds_back_pending_syncs() -> None:
    writer = OffsetSyncWriter(max_offset_lag=1, max_outstanding=1)
    writer.maybe_queue_offset_syncs(TP, 0, 100)
    assert writer.next_pending() == OffsetSync("topic", 0, 0, 100)
    writer.maybe_queue_offset_syncs(TP, 2, 102)
    state = writer.partition_state(TP)
    assert state is not None
    assert state.last_sync_downstream_offset == 102
    assert writer.next_pending() is None, "one sync in flight: the next must wait"
    assert TP in writer.pending_offset_syncs()
    writer.release()
    assert writer.next_pending() == OffsetSync("topic", 0, 2, 102)
    assert writer.next_pending() is None


def test_default_bound_is_ten_and_order_is_first_queued() -> None:
    writer = OffsetSyncWriter(max_offset_lag=100)
    tps = [TopicPartition("t", p) for p in range(12)]
    for tp in tps:
        writer.maybe_queue_offset_syncs(tp, 0, 0)
    sent = []
    while (sync := writer.next_pending()) is not None:
        sent.append(sync.topic_partition)
    assert MAX_OUTSTANDING_OFFSET_SYNCS == 10
    assert sent == tps[:10]
    assert writer.outstanding == 10
    assert list(writer.pending_offset_syncs()) == tps[10:]


def test_latest_pending_sync_per_partition_wins() -> None:
    writer = OffsetSyncWriter(max_offset_lag=0, max_outstanding=0)
    other = TopicPartition("topic", 1)
    writer.maybe_queue_offset_syncs(TP, 0, 0)
    writer.maybe_queue_offset_syncs(other, 0, 0)
    writer.maybe_queue_offset_syncs(TP, 1, 1)
    assert writer.pending_offset_syncs() == {
        TP: OffsetSync("topic", 0, 1, 1),
        other: OffsetSync("topic", 1, 0, 0),
    }
    assert list(writer.pending_offset_syncs()) == [TP, other]


def test_release_without_acquire_is_an_error() -> None:
    with pytest.raises(RuntimeError):
        OffsetSyncWriter(max_offset_lag=1).release()


def test_concurrent_producers_never_exceed_the_bound() -> None:
    writer = OffsetSyncWriter(max_offset_lag=0, max_outstanding=3)
    peak = 0
    lock = threading.Lock()

    def work(partition: int) -> None:
        nonlocal peak
        tp = TopicPartition("t", partition)
        for i in range(200):
            writer.maybe_queue_offset_syncs(tp, i, i)
            if writer.next_pending() is not None:
                with lock:
                    peak = max(peak, writer.outstanding)
                writer.release()

    threads = [threading.Thread(target=work, args=(p,)) for p in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert 1 <= peak <= 3
    assert writer.outstanding == 0


@given(
    lag=st.integers(min_value=0, max_value=30),
    runs=st.lists(
        st.tuples(
            st.integers(min_value=1, max_value=5),  # upstream gap before the run
            st.integers(min_value=-3, max_value=5),  # downstream gap (negative: truncation)
            st.integers(min_value=1, max_value=80),  # run length
        ),
        max_size=12,
    ),
)
def test_update_run_fires_exactly_where_per_record_updates_would(
    lag: int, runs: list[tuple[int, int, int]]
) -> None:
    by_record, by_run = PartitionState(lag), PartitionState(lag)
    expected: list[tuple[int, int]] = []
    fired: list[tuple[int, int]] = []
    up, down = -1, -1
    for up_gap, down_gap, length in runs:
        up, down = up + up_gap, max(0, down + down_gap)
        for k in range(length):
            if by_record.update(up + k, down + k):
                expected.append((up + k, down + k))
                by_record.reset()
        fired.extend(by_run.update_run(up, down, length))
        up, down = up + length - 1, down + length - 1
    assert fired == expected
    assert by_run.previous_upstream_offset == by_record.previous_upstream_offset
    assert by_run.last_sync_downstream_offset == by_record.last_sync_downstream_offset
