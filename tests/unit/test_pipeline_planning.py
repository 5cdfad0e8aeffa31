"""Micro-batch planning: end offsets, work units, and how units are spread over Spark tasks."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from mm2.kafka.copier import WorkUnit
from mm2.pipeline.planning import group_units, plan_end, plan_units, to_offsets
from mm2.pipeline.routes import Route


def unit(partition: int, records: int, topic: str = "t") -> WorkUnit:
    return WorkUnit(topic, partition, 100, 100 + records, f"primary.{topic}")


def earliest_at(offset: int) -> Callable[[Iterable[tuple[str, int]]], dict[tuple[str, int], int]]:
    def earliest(tps: Iterable[tuple[str, int]]) -> dict[tuple[str, int], int]:
        return {tp: offset for tp in tps}

    return earliest


def test_a_small_batch_goes_to_one_task() -> None:
    units = [unit(p, 500) for p in range(8)]  # 4,000 records: less than one task's worth
    groups = group_units(units, tasks_max=4, slots=2, min_task_records=5_000)
    assert len(groups) == 1 and sorted(u.partition for u in groups[0]) == list(range(8))


def test_a_big_batch_fills_the_slots_but_no_more() -> None:
    units = [unit(p, 50_000) for p in range(8)]
    assert len(group_units(units, tasks_max=4, slots=2, min_task_records=5_000)) == 2
    assert len(group_units(units, tasks_max=4, slots=0, min_task_records=5_000)) == 4
    assert len(group_units(units, tasks_max=16, slots=64, min_task_records=5_000)) == 8


def test_tasks_grow_with_the_records_up_to_tasks_max() -> None:
    units = [unit(p, 3_000) for p in range(8)]  # 24,000 records
    assert len(group_units(units, tasks_max=8, slots=8, min_task_records=5_000)) == 5
    assert len(group_units(units, tasks_max=3, slots=8, min_task_records=5_000)) == 3


def test_grouping_keeps_every_unit_whole_and_balances_the_load() -> None:
    units = [unit(0, 900), unit(1, 500), unit(2, 400), unit(3, 300), unit(4, 100)]
    groups = group_units(units, tasks_max=2, slots=2, min_task_records=1)
    assert sorted(u.partition for g in groups for u in g) == [0, 1, 2, 3, 4]  # whole, once
    loads = sorted(sum(u.until - u.start for u in g) for g in groups)
    assert loads == [1_000, 1_200]


def test_nothing_to_copy_makes_no_task() -> None:
    assert group_units([], tasks_max=4, slots=2) == []


def test_plan_end_bounds_each_partition_and_starts_new_ones_at_the_earliest() -> None:
    start = to_offsets({("t", 0): 10})
    latest = {("t", 0): 1_000, ("t", 1): 50}
    end = plan_end(start, latest, earliest_at(5), max_records_per_partition=100, from_latest=False)
    assert end == {"t": {"0": 110, "1": 50}}
    from_latest = plan_end(
        start, latest, earliest_at(5), max_records_per_partition=100, from_latest=True
    )
    assert from_latest == {"t": {"0": 110, "1": 50}}
    assert plan_end({}, latest, earliest_at(5), max_records_per_partition=10, from_latest=True) == {
        "t": {"0": 1_000, "1": 50}
    }


def test_plan_end_keeps_positions_of_partitions_no_longer_listed() -> None:
    start = to_offsets({("gone", 0): 7, ("t", 0): 1})
    end = plan_end(
        start, {("t", 0): 3}, earliest_at(0), max_records_per_partition=10, from_latest=False
    )
    assert end == {"gone": {"0": 7}, "t": {"0": 3}}


def test_plan_units_only_for_routed_partitions_with_records() -> None:
    routes = {"t": Route("t", "primary.t", 2)}
    start = to_offsets({("t", 0): 10, ("t", 1): 20, ("gone", 0): 3})
    end = to_offsets({("t", 0): 15, ("t", 1): 20, ("t", 2): 9, ("gone", 0): 8})
    units = plan_units(start, end, routes, earliest_at(0))
    assert units == [WorkUnit("t", 0, 10, 15, "primary.t")]
