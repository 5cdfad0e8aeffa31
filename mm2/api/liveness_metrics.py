"""Heartbeats and checkpoint passes per flow as Prometheus metrics (mm2.runtime.liveness)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Protocol, TypeVar

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from mm2.runtime.liveness import FlowLiveness, Liveness

__all__ = ["LivenessCollector", "flow_families"]


class _OfFlow(Protocol):
    @property
    def source(self) -> str: ...
    @property
    def target(self) -> str: ...


_R = TypeVar("_R", bound=_OfFlow)

# A figure of a flow: its family's type, name and help, and how to read it from a row (None:
# the flow has no sample).
Figure = tuple[
    type[CounterMetricFamily] | type[GaugeMetricFamily],
    str,
    str,
    Callable[[_R], float | None],
]


def flow_families(figures: Sequence[Figure[_R]], rows: Iterable[_R]) -> Iterator[Metric]:
    """A family per figure, labelled by flow (source, target), with a sample per row."""
    listed = list(rows)
    for kind, name, doc, read in figures:
        family = kind(name, doc, labels=["source", "target"])
        for row in listed:
            value = read(row)
            if value is not None:
                family.add_metric([row.source, row.target], value)
        yield family


_LIVENESS: tuple[Figure[FlowLiveness], ...] = (
    (
        CounterMetricFamily,
        "mm2_heartbeat_count",
        "heartbeats the target cluster acknowledged",
        lambda flow: flow.heartbeats,
    ),
    (
        GaugeMetricFamily,
        "mm2_heartbeat_last_timestamp_seconds",
        "Unix time of the last heartbeat the target cluster acknowledged",
        lambda flow: flow.last_heartbeat_s,
    ),
    (
        CounterMetricFamily,
        "mm2_checkpoint_pass_count",
        "checkpoint passes that left every group's checkpoints current on the target",
        lambda flow: flow.checkpoint_passes,
    ),
    (
        GaugeMetricFamily,
        "mm2_checkpoint_last_pass_timestamp_seconds",
        "Unix time of the last checkpoint pass that left every group's checkpoints current",
        lambda flow: flow.last_checkpoint_pass_s,
    ),
)


class LivenessCollector(Collector):
    def __init__(self, liveness: Liveness) -> None:
        self._liveness = liveness

    def collect(self) -> Iterator[Metric]:
        return flow_families(_LIVENESS, self._liveness.snapshot())
