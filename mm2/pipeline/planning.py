"""Micro-batch planning: end offsets, work units and their grouping into Spark partitions."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from heapq import heapify, heappop, heappush

from mm2.kafka.copier import WorkUnit
from mm2.pipeline.routes import Route

__all__ = [
    "MIN_TASK_RECORDS",
    "Offsets",
    "from_offsets",
    "group_units",
    "plan_end",
    "plan_units",
    "to_offsets",
]

# Below this many records per task, one more Spark task costs more than it saves.
MIN_TASK_RECORDS = 5_000

# Spark keeps source offsets as JSON: {"topic": {"partition": next_offset}}.
Offsets = dict[str, dict[str, int]]


def from_offsets(offsets: Offsets) -> dict[tuple[str, int], int]:
    return {(t, int(p)): o for t, parts in offsets.items() for p, o in parts.items()}


def to_offsets(flat: Mapping[tuple[str, int], int]) -> Offsets:
    out: Offsets = {}
    for (topic, partition), offset in sorted(flat.items()):
        out.setdefault(topic, {})[str(partition)] = offset
    return out


def plan_end(
    start: Offsets,
    latest: Mapping[tuple[str, int], int],
    earliest: Callable[[Iterable[tuple[str, int]]], Mapping[tuple[str, int], int]],
    *,
    max_records_per_partition: int,
    from_latest: bool,
) -> Offsets:
    """End offsets of the next batch: at most max_records_per_partition ahead of start.

    Partitions already known keep their entry even when no longer routed, so the offsets
    Spark stores never lose a position.
    """
    begin = from_offsets(start)
    new = [tp for tp in latest if tp not in begin]
    first = {tp: latest[tp] for tp in new} if from_latest else dict(earliest(new))
    end = dict(begin)
    for tp, last in latest.items():
        b = begin.get(tp, first.get(tp, last))
        end[tp] = max(b, min(last, b + max_records_per_partition))
    return to_offsets(end)


def plan_units(
    start: Offsets,
    end: Offsets,
    routes: Mapping[str, Route],
    earliest: Callable[[Iterable[tuple[str, int]]], Mapping[tuple[str, int], int]],
) -> list[WorkUnit]:
    """One unit per routed partition that has records between start and end."""
    begin = from_offsets(start)
    stop = from_offsets(end)
    missing = dict(earliest([tp for tp in stop if tp not in begin]))
    units = []
    for (topic, partition), until in sorted(stop.items()):
        route = routes.get(topic)
        if route is None or partition >= route.partitions:
            continue
        first = begin.get((topic, partition), missing.get((topic, partition), until))
        if first < until:
            units.append(WorkUnit(topic, partition, first, until, route.target_topic))
    return units


def group_units(
    units: Iterable[WorkUnit],
    tasks_max: int,
    *,
    slots: int = 0,
    min_task_records: int = MIN_TASK_RECORDS,
) -> list[list[WorkUnit]]:
    """Spread units over as few Spark tasks as keep the cores busy, largest first onto the
    lightest task.

    At most tasks_max tasks, at most `slots` (Spark's parallelism; 0: unknown) so a batch runs
    in one wave, and no more than one per min_task_records records: a Spark task costs tens of
    milliseconds to schedule, as much as copying a few thousand records, so a small batch in
    many tasks only waits longer. A partition is never split: one writer per target partition
    keeps its order.
    """
    ordered = sorted(units, key=lambda u: (-(u.until - u.start), u.topic, u.partition))
    if not ordered:
        return []
    records = sum(u.until - u.start for u in ordered)
    count = min(tasks_max, len(ordered), -(-records // max(1, min_task_records)))
    if slots > 0:
        count = min(count, slots)
    count = max(1, count)
    groups: list[list[WorkUnit]] = [[] for _ in range(count)]
    heap = [(0, i) for i in range(count)]
    heapify(heap)
    for unit in ordered:
        load, i = heappop(heap)
        groups[i].append(unit)
        heappush(heap, (load + unit.until - unit.start, i))
    return groups
