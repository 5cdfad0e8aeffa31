"""LagMonitor finds a stall per partition: one stuck partition shows while the others copy."""

from __future__ import annotations

import pytest

from mm2.client.lag import LagReport, PartitionLag
from mm2.config import Flow, load_properties, parse_properties
from mm2.runtime import lag
from mm2.runtime.flow_state import STALL_S, flow_state
from mm2.runtime.metrics import MetricsRegistry
from mm2.runtime.status import ConnectorStatus, TaskStatus

PROPERTIES = """
clusters = a, b
a.bootstrap.servers = a:9092
b.bootstrap.servers = b:9092
a->b.enabled = true
"""
FLOW = load_properties(parse_properties(PROPERTIES, "mm2.properties")).flow("a", "b")


class Clock:
    now = 1000.0

    def __call__(self) -> float:
        return self.now


def unused(flow: Flow) -> lag.LagSource:
    raise AssertionError("the monitor is not started here")


def report(*rows: tuple[int, int, int]) -> LagReport:
    """(partition, position, records waiting) of topic `orders`."""
    return LagReport(
        "a->b",
        0,
        tuple(PartitionLag("orders", p, pos + n, pos, n, 1.0) for p, pos, n in rows),
    )


def test_one_stuck_partition_is_found_while_the_others_copy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = Clock()
    monkeypatch.setattr("mm2.runtime.lag.time.monotonic", clock)
    monitor = lag.LagMonitor(FLOW, unused, MetricsRegistry())  # fed by _take, never started
    # Partition 0 copies on (its position moves), partition 1 stays at 50 with 7 waiting.
    for step in range(12):
        monitor._take(report((0, 100 + step * 10, 5), (1, 50, 7)))
        clock.now += 3.0
    seconds, partition, waiting = monitor.stall()
    assert partition == "orders-1" and waiting == 7 and seconds >= STALL_S, monitor.stall()

    running = ConnectorStatus("C", "RUNNING", "w", (TaskStatus(0, "RUNNING", "w"),))
    state, cause = flow_state(FLOW, [running], runs_here=True, leader=None, monitor=monitor)
    assert state == "DEGRADED" and cause is not None and "orders-1 has 7 records" in cause, cause

    # It moves again: no stall; a partition with nothing waiting never is one.
    monitor._take(report((0, 300, 0), (1, 57, 0)))
    clock.now += 60.0
    monitor._take(report((0, 300, 0), (1, 57, 0)))
    assert monitor.stall() == (0.0, None, 0)
