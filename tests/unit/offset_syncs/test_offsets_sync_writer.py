"""PartitionState, the offset-sync rule, against MirrorSourceTaskTest (reference §4.2)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mm2.offset_syncs.sync_writer import PartitionState
from mm2.records import TopicPartition

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
