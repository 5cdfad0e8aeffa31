"""Heartbeats and checkpoint passes per flow as Prometheus metrics (mm2.runtime.liveness)."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from mm2.runtime.liveness import Liveness

__all__ = ["LivenessCollector"]

_FLOW = ["source", "target"]


class LivenessCollector(Collector):
    def __init__(self, liveness: Liveness) -> None:
        self._liveness = liveness

    def collect(self) -> Iterator[Metric]:
        beats = CounterMetricFamily(
            "mm2_heartbeat_count", "heartbeats the target cluster acknowledged", labels=_FLOW
        )
        last_beat = GaugeMetricFamily(
            "mm2_heartbeat_last_timestamp_seconds",
            "Unix time of the last heartbeat the target cluster acknowledged",
            labels=_FLOW,
        )
        passes = CounterMetricFamily(
            "mm2_checkpoint_pass_count",
            "checkpoint passes that left every group's checkpoints current on the target",
            labels=_FLOW,
        )
        last_pass = GaugeMetricFamily(
            "mm2_checkpoint_last_pass_timestamp_seconds",
            "Unix time of the last checkpoint pass that left every group's checkpoints current",
            labels=_FLOW,
        )
        for flow in self._liveness.snapshot():
            labels = [flow.source, flow.target]
            beats.add_metric(labels, flow.heartbeats)
            passes.add_metric(labels, flow.checkpoint_passes)
            if flow.last_heartbeat_s is not None:
                last_beat.add_metric(labels, flow.last_heartbeat_s)
            if flow.last_checkpoint_pass_s is not None:
                last_pass.add_metric(labels, flow.last_checkpoint_pass_s)
        yield from (beats, last_beat, passes, last_pass)
