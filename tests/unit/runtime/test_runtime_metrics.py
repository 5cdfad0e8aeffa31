"""The metrics registry: counts, latency, record age, rates and lag from copy results."""

from __future__ import annotations

import time

from mm2.copy.routes import Route
from mm2.copy.stats import CopyStats
from mm2.runtime.metrics import MetricsRegistry
from mm2.runtime.snapshots import PartitionSnapshot


def now_ms() -> int:
    return int(time.time() * 1000)


def result(start: int, until: int, *, stamps: list[int], read_at: int, done: int) -> CopyStats:
    ages = [read_at - ts for ts in stamps]
    return CopyStats(
        "orders",
        0,
        "primary.orders",
        position=until - 1,
        first=start,
        records=len(stamps),
        bytes=100 * len(stamps),
        runs=[(start, start, len(stamps))],
        min_timestamp=min(stamps),
        max_timestamp=max(stamps),
        sum_timestamp=sum(stamps),
        finished_ms=done,
        age_min_ms=min(ages),
        age_max_ms=max(ages),
        age_sum_ms=sum(ages),
    )


def only(registry: MetricsRegistry) -> PartitionSnapshot:
    (snap,) = registry.snapshot()
    return snap


def test_routes_register_every_partition_with_zero_figures() -> None:
    reg = MetricsRegistry()
    reg.set_routes("primary", "backup", {"orders": Route("orders", "primary.orders", 3)})
    snaps = reg.snapshot()
    assert [(s.topic, s.partition, s.target_topic) for s in snaps] == [
        ("orders", p, "primary.orders") for p in range(3)
    ]
    assert all(s.record_count == 0 and s.lag_records == 0 for s in snaps)


def test_counts_latency_and_record_age_accumulate_over_batches() -> None:
    reg = MetricsRegistry()
    base = now_ms() - 1_000
    reg.record_batch(
        "primary",
        "backup",
        [result(0, 2, stamps=[base, base + 10], read_at=base + 50, done=base + 100)],
    )
    reg.record_batch(
        "primary", "backup", [result(2, 3, stamps=[base + 20], read_at=base + 30, done=base + 40)]
    )
    s = only(reg)
    assert (s.record_count, s.byte_count) == (3, 300)
    # latency: finished - timestamp per record = 100, 90 and 20
    assert s.replication_latency_ms_min == 20
    assert s.replication_latency_ms_max == 100
    assert s.replication_latency_ms_avg == (100 + 90 + 20) / 3
    # age: read time - timestamp per record = 50, 40 and 10; never above the latency
    assert (s.record_age_ms_min, s.record_age_ms_max) == (10, 50)
    assert s.record_age_ms_avg == (50 + 40 + 10) / 3
    assert s.record_rate == 3 / 30 and s.byte_rate == 300 / 30


def test_lag_is_end_offset_minus_mirrored_position_in_records_and_seconds() -> None:
    reg = MetricsRegistry()
    stamp = now_ms() - 4_000
    reg.record_batch(
        "primary", "backup", [result(0, 5, stamps=[stamp] * 5, read_at=stamp, done=stamp)]
    )
    reg.update_end_offsets("primary", "backup", {("orders", 0): 12})
    s = only(reg)
    assert s.lag_records == 7
    assert 3.5 < s.lag_seconds < 60
    reg.update_end_offsets("primary", "backup", {("orders", 0): 5})
    assert only(reg).lag_records == 0 and only(reg).lag_seconds == 0.0


def test_empty_units_move_the_position_without_counting() -> None:
    reg = MetricsRegistry()
    empty = CopyStats("orders", 0, "primary.orders", position=8)
    reg.record_batch("primary", "backup", [empty])
    reg.update_end_offsets("primary", "backup", {("orders", 0): 9})
    s = only(reg)
    assert s.record_count == 0 and s.lag_records == 0
    assert s.record_age_ms_avg == 0.0 and s.replication_latency_ms_min == 0.0


def test_rates_forget_batches_older_than_the_window() -> None:
    reg = MetricsRegistry()
    old = now_ms() - 120_000
    reg.record_batch("primary", "backup", [result(0, 1, stamps=[old], read_at=old, done=old)])
    s = only(reg)
    assert s.record_count == 1 and s.record_rate == 0.0


def test_checkpoint_latency_is_kept_per_group_and_downstream_partition() -> None:
    reg = MetricsRegistry()
    reg.record_checkpoints("primary", "backup", "g1", {("primary.orders", 0): 40.0})
    reg.record_checkpoints("primary", "backup", "g1", {("primary.orders", 0): 10.0})
    reg.record_checkpoints("primary", "backup", "g2", {("primary.orders", 1): 7.0})
    first, second = reg.checkpoint_snapshot()
    assert (first.group, first.topic, first.partition, first.checkpoint_count) == (
        "g1",
        "primary.orders",
        0,
        2,
    )
    assert (first.checkpoint_latency_ms, first.checkpoint_latency_ms_min) == (10.0, 10.0)
    assert (first.checkpoint_latency_ms_max, first.checkpoint_latency_ms_avg) == (40.0, 25.0)
    assert (second.group, second.partition, second.checkpoint_count) == ("g2", 1, 1)


def test_the_lag_counts_as_read_from_kafka_once_every_partition_of_the_flow_was() -> None:
    reg = MetricsRegistry()
    assert not reg.lag_read_from_kafka("a", "b")  # nothing known: the planner reads the ends
    reg.set_routes("a", "b", {"orders": Route("orders", "a.orders", 2)})
    reg.set_routes("c", "b", {"orders": Route("orders", "c.orders", 1)})
    reg.update_lag("a", "b", {("orders", 0): ("a.orders", 5, 1.0)})
    assert not reg.lag_read_from_kafka("a", "b")  # partition 1 not read yet
    reg.update_lag("a", "b", {("orders", 1): ("a.orders", 0, 0.0)})
    assert reg.lag_read_from_kafka("a", "b")
    assert not reg.lag_read_from_kafka("c", "b")  # another flow's partitions are its own
    reg.set_routes("a", "b", {"orders": Route("orders", "a.orders", 3)})  # a new partition
    assert not reg.lag_read_from_kafka("a", "b")


def test_a_topic_created_again_starts_its_positions_over() -> None:
    metrics = MetricsRegistry()
    t = now_ms()
    metrics.record_batch("a", "b", [result(0, 3000, stamps=[t], read_at=t, done=t)])
    metrics.update_end_offsets("a", "b", {("orders", 0): 3000})
    assert metrics.snapshot()[0].lag_records == 0
    # Deleted, created again and refilled with 6,000 records: the old high mark is not its own.
    metrics.topic_recreated("a", "b", "orders")
    metrics.update_end_offsets("a", "b", {("orders", 0): 6000})
    assert metrics.snapshot()[0].lag_records == 6000
    assert metrics.recreated_topics() == {("a", "b", "orders"): 1}


def test_records_gone_truncations_and_re_created_topics_are_counted_and_kept_as_events() -> None:
    registry = MetricsRegistry()
    jump = CopyStats("orders", 0, "primary.orders", position=1499, gone=500)  # no record copied
    registry.record_batch("primary", "backup", [jump])
    cut = CopyStats("orders", 1, "primary.orders", position=2, truncated=1)
    registry.record_batch("primary", "backup", [cut])
    registry.topic_recreated("primary", "backup", "payments")
    snaps = {s.partition: s for s in registry.snapshot()}
    assert snaps[0].gone_count == 500
    assert snaps[1].truncated_count == 1
    events = registry.events("primary", "backup")
    assert [e.kind for e in events] == ["records-gone", "log-truncated", "topic-recreated"]
    assert "orders-0: 500 record(s) deleted" in events[0].message
    assert "payments" in events[2].message
    assert registry.events("primary", "dr") == ()
    for _ in range(30):  # only the newest are kept
        registry.topic_recreated("primary", "backup", "payments")
    assert len(registry.events("primary", "backup")) == 20


def test_series_of_topics_no_longer_routed_of_gone_groups_and_of_removed_flows_go() -> None:
    reg = MetricsRegistry()
    reg.set_routes(
        "a", "b", {"orders": Route("orders", "a.orders", 2), "gone": Route("gone", "a.gone", 1)}
    )
    reg.set_routes("c", "b", {"orders": Route("orders", "c.orders", 1)})
    reg.update_lag("a", "b", {("gone", 0): ("a.gone", 900, 60.0)})  # lagging when deleted
    reg.record_checkpoints("a", "b", "console-consumer-1", {("a.orders", 0): 5.0})
    reg.record_checkpoints("a", "b", "billing", {("a.orders", 0): 5.0})
    reg.set_routes("a", "b", {"orders": Route("orders", "a.orders", 1)})  # deleted, shrunk
    assert {(s.source, s.topic, s.partition) for s in reg.snapshot()} == {
        ("a", "orders", 0),
        ("c", "orders", 0),
    }
    reg.keep_checkpoint_groups("a", "b", ["billing"])
    assert [c.group for c in reg.checkpoint_snapshot()] == ["billing"]
    reg.forget_flow("a", "b")
    assert [s.source for s in reg.snapshot()] == ["c"] and reg.checkpoint_snapshot() == []
