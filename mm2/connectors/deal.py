"""Which source partitions each copy task of a flow owns (docs/architecture.md, "The copy path").

An epoch starts with Apache's deal: partition i of the sorted list goes to task i % tasks. While
it runs, partitions that appear (a new topic, partitions added to one) are dealt to the copy
tasks that hold the fewest, and every partition already dealt stays where it is, so no copy
task has to stop (mm2.kafka.copy_assignment). Anything else (a partition no longer routed, a
remote topic renamed, a different number of copy tasks) needs a new epoch.
"""

from __future__ import annotations

from collections.abc import Mapping

from mm2.copy.routes import Route

__all__ = ["Placed", "deal", "extend_deal", "task_count"]

Placed = tuple[str, int, str]  # source topic, partition, remote topic


def _routed(routes: Mapping[str, Route]) -> list[Placed]:
    return sorted(
        (r.topic, p, r.target_topic) for r in routes.values() for p in range(r.partitions)
    )


def task_count(routes: Mapping[str, Route], tasks: int) -> int:
    """How many copy tasks `deal` makes: no more than there are partitions, none for none."""
    partitions = sum(r.partitions for r in routes.values())
    return max(1, min(tasks, partitions)) if partitions else 0


def deal(routes: Mapping[str, Route], tasks: int) -> list[list[Placed]]:
    """Apache's assignment: partition i of the sorted list goes to task i % tasks."""
    flat = _routed(routes)
    count = task_count(routes, tasks)
    return [flat[i::count] for i in range(count)]


def extend_deal(
    dealt: list[list[Placed]], routes: Mapping[str, Route]
) -> dict[int, list[Placed]] | None:
    """The routed partitions `dealt` lacks, each given to the task holding the fewest at that
    moment (the lowest task on a tie), in sorted order; {} when nothing is new. None when the
    deal cannot grow in place: a dealt partition is no longer routed to the same remote topic,
    or there are no copy tasks to give partitions to."""
    routed = _routed(routes)
    held = {placed for part in dealt for placed in part}
    if not held.issubset(routed):
        return None
    new = [placed for placed in routed if placed not in held]
    if not new:
        return {}
    if not dealt:
        return None
    sizes = [len(part) for part in dealt]
    added: dict[int, list[Placed]] = {}
    for placed in new:
        task = min(range(len(sizes)), key=lambda i: (sizes[i], i))
        added.setdefault(task, []).append(placed)
        sizes[task] += 1
    return added
