"""The unplanned-failover report: a bound on what is missing only from ends read for the report,
else unknown since the time the ends the target holds were read."""

from __future__ import annotations

from mm2.cli.offset_tools import render_recovery_point
from mm2.client.recovery import LiveEnds, PartitionAtRisk, RecoveryPoint, assess
from mm2.copy.position_record import PositionRecord, StoredPositions
from mm2.copy.source_ends import SourceEnds
from mm2.copy.stats import CopyStats

T = 1_700_000_000_000  # 2023-11-14 22:13:20 UTC


def stored(
    positions: dict[tuple[str, int], int], ends: dict[tuple[str, int], int], read_at: int
) -> StoredPositions:
    out = StoredPositions()
    out.apply([PositionRecord(t, p, o, "ours", None) for (t, p), o in positions.items()])
    out.apply_ends(SourceEnds("primary->backup", read_at, ends))
    return out


def test_ends_read_for_the_report_give_a_bound_that_counts_never_copied_and_truncated_logs() -> (
    None
):
    positions = stored(
        {("orders", 0): 119, ("orders", 1): 99, ("orders", 2): 500, ("gone", 0): 7}, {}, 0
    )
    live = LiveEnds(
        T,
        {("orders", 0): 120, ("orders", 1): 130, ("orders", 2): 300, ("orders", 3): 40},
        {("orders", 2): 10, ("orders", 3): 5},  # the starts of the truncated and the new
        {},
    )
    point = assess("primary->backup", positions, live)
    rows = {(r.topic, r.partition): r for r in point.partitions}
    # A topic the source no longer has risks nothing; a new partition risks its whole log.
    assert set(rows) == {("orders", 0), ("orders", 1), ("orders", 2), ("orders", 3)}
    assert [rows[("orders", p)].at_risk for p in range(4)] == [0, 30, 290, 35]
    assert rows[("orders", 3)].copied_to is None
    assert point.at_risk_at_most == 355
    assert point.unknown_since_ms is None and point.unknown == ()
    assert rows[("orders", 1)].to_json() == {
        "topic": "orders",
        "partition": 1,
        "copied_to": 100,
        "source_end": 130,
        "ends_read_at_ms": T,
        "current": True,
        "at_risk_at_most": 30,
        "unknown_since_ms": None,
        "uncopied_below_end": 30,
    }
    assert point.summary().startswith("records not copied: at most 355 in 4 partition(s)")


def test_a_position_of_a_topic_created_again_counts_the_new_log() -> None:
    positions = StoredPositions()
    positions.apply([PositionRecord("orders", 0, 999, "ours", None, topic_id="old-id")])
    live = LiveEnds(T, {("orders", 0): 50}, {("orders", 0): 0}, {"orders": "new-id"})
    (row,) = assess("primary->backup", positions, live).partitions
    assert (row.copied_to, row.at_risk) == (None, 50)


def test_without_the_source_the_figure_is_unknown_since_the_ends_were_last_read() -> None:
    # The flow was paused: the copy tasks' ends are old, the lag reader's newer (and larger).
    positions = stored(
        {("orders", 0): 99, ("orders", 1): 119},
        {("orders", 0): 180, ("orders", 1): 120, ("orders", 2): 60},
        T + 8_000,
    )
    seen = CopyStats("orders", 0, "", position=99, source_end=100, source_end_ms=T)
    positions.apply([PositionRecord("orders", 0, 99, "ours", seen)])  # older: not taken
    point = assess(
        "primary->backup", positions, None, problem="source primary: timed out", now_ms=T + 60_000
    )
    assert point.at_risk_at_most is None
    assert all(r.at_risk is None and not r.current for r in point.partitions)
    assert point.unknown_since_ms == T + 8_000
    assert [r.uncopied_below_end for r in point.partitions] == [80, 0, None]
    assert point.uncopied_below_ends == 80
    doc = point.to_json()
    assert (doc["at_risk_at_most"], doc["unknown_since_ms"], doc["unknown_partitions"]) == (
        None,
        T + 8_000,
        3,
    )
    assert doc["source_problem"] == "source primary: timed out"
    assert point.partitions[0].to_json()["unknown_since_ms"] == T + 8_000
    assert point.summary() == (
        "records not copied: unknown since 2023-11-14 22:13:28.000 UTC (the source's ends are "
        "not current: source primary: timed out); below the last ends read, 80 offset(s) in 3 "
        "partition(s) are not copied"
    )


def test_the_oldest_read_time_is_the_one_said_and_never_read_says_so() -> None:
    old = PartitionAtRisk("orders", 0, 10, 20, T)
    newer = PartitionAtRisk("orders", 1, 10, 20, T + 5_000)
    assert RecoveryPoint("f", T + 9_000, (old, newer), "down").unknown_since_ms == T
    never = PartitionAtRisk("orders", 2, 7, None, None)  # an older mm2 wrote the position
    point = RecoveryPoint("f", T + 9_000, (old, newer, never), "down")
    assert (point.at_risk_at_most, point.unknown_since_ms, point.never_read) == (None, None, 1)
    assert point.summary().startswith(
        "records not copied: unknown (1 partition(s) without an end ever read)"
    )
    # Even a current row set is no bound when the report says the source did not answer.
    current = PartitionAtRisk("orders", 0, 10, 20, T, current=True)
    assert RecoveryPoint("f", T, (current,), "down").at_risk_at_most is None
    assert RecoveryPoint("f", T, (current,)).at_risk_at_most == 10


def test_the_table_says_unknown_where_there_is_no_bound() -> None:
    current = PartitionAtRisk("orders", 1, 100, 130, T + 500, current=True)
    text = render_recovery_point(RecoveryPoint("primary->backup", T + 500, (current,)))
    lines = text.splitlines()
    assert lines[0].startswith("recovery point of primary->backup")
    assert lines[3].split() == ["orders-1", "100", "130", "2023-11-14", "22:13:20.500", "30", "30"]
    assert lines[-1].startswith("records not copied: at most 30 in 1 partition(s)")
    stale = PartitionAtRisk("orders", 1, 100, 130, T + 500)
    never = PartitionAtRisk("orders", 2, 7, None, None)
    text = render_recovery_point(RecoveryPoint("primary->backup", T + 9_000, (stale, never), "x"))
    lines = text.splitlines()
    assert lines[3].split() == [
        "orders-1",
        "100",
        "130",
        "2023-11-14",
        "22:13:20.500",
        "unknown",
        "30",
    ]
    assert lines[4].split() == ["orders-2", "7", "-", "-", "unknown", "-"]
    assert lines[-1].startswith("records not copied: unknown (1 partition(s)")
