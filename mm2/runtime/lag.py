"""LagMonitor: a flow's lag read from Kafka every few seconds, whatever its tasks are doing.

The reader (mm2.client.lag.LagReader in the running mirror) asks the source for its log ends
and the target's offsets topic for the committed positions. The monitor keeps the last report,
notes when the positions last moved while records were waiting (a stall), and gives the
figures to the metrics registry, which /flows, /metrics and `mm2 status` read.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Protocol

from mm2.client.lag import LagReport
from mm2.config.model import Flow
from mm2.runtime.metrics import MetricsRegistry

__all__ = ["LagMonitor", "LagMonitors", "LagSource"]

log = logging.getLogger(__name__)


class LagSource(Protocol):
    def read(self) -> LagReport: ...
    def close(self) -> None: ...


class LagMonitor:
    """Reads one flow's lag every `interval` seconds on a thread of its own."""

    def __init__(
        self,
        flow: Flow,
        reader: Callable[[Flow], LagSource],
        metrics: MetricsRegistry,
        *,
        interval: float = 3.0,
    ) -> None:
        self.flow = flow
        self._metrics = metrics
        self._make = reader
        self._interval = interval
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._report: LagReport | None = None
        # Per partition: its position last read and since when it has been there while
        # records waited (a partition with nothing to copy is never stalled).
        self._since: dict[tuple[str, int], tuple[int | None, float]] = {}
        self._thread: threading.Thread | None = None

    @property
    def report(self) -> LagReport | None:
        with self._lock:
            return self._report

    def stall(self) -> tuple[float, str | None, int]:
        """(seconds, `topic-partition`, records waiting) of the partition whose position has
        not moved for longest while records waited in it; (0.0, None, 0) when none. Found per
        partition, so one stuck partition shows while the others copy."""
        with self._lock:
            report = self._report
            if report is None:
                return 0.0, None, 0
            now = time.monotonic()
            worst: tuple[float, str | None, int] = (0.0, None, 0)
            for p in report.partitions:
                since = self._since.get((p.topic, p.partition))
                if p.records and since is not None and now - since[1] > worst[0]:
                    worst = (now - since[1], f"{p.topic}-{p.partition}", p.records)
            return worst

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=f"lag-{self.flow.name}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()

    def _run(self) -> None:
        reader: LagSource | None = None
        try:
            while not self._stopping.is_set():
                try:
                    reader = reader or self._make(self.flow)
                    self._take(reader.read())
                except Exception as exc:  # noqa: BLE001 - a reading problem is a figure too
                    log.debug("%s: lag not read: %s", self.flow.name, exc)
                    self._fail(str(exc) or type(exc).__name__)
                self._stopping.wait(self._interval)
        finally:
            if reader is not None:
                reader.close()

    def _take(self, report: LagReport) -> None:
        remote = self.flow.replication_policy().format_remote_topic
        now = time.monotonic()
        with self._lock:
            since: dict[tuple[str, int], tuple[int | None, float]] = {}
            for p in report.partitions:
                tp = (p.topic, p.partition)
                last = self._since.get(tp)
                if last is None or last[0] != p.position or p.records == 0:
                    last = (p.position, now)
                since[tp] = last
            self._since = since
            self._report = report
        self._metrics.set_open_transactions(
            self.flow.source,
            self.flow.target,
            {(o.topic, o.partition): o.seconds for o in report.open_transactions},
        )
        self._metrics.update_lag(
            self.flow.source,
            self.flow.target,
            {
                (p.topic, p.partition): (remote(self.flow.source, p.topic), p.records, p.seconds)
                for p in report.partitions
            },
        )

    def _fail(self, problem: str) -> None:
        with self._lock:
            last = self._report
            self._report = LagReport(
                self.flow.name,
                int(time.time() * 1000),
                last.partitions if last else (),
                (f"lag not read: {problem}",),
                last.positions_read_at_ms if last else 0,
            )


class LagMonitors:
    """One LagMonitor per enabled flow (none without a reader: tests, tools)."""

    def __init__(
        self, reader: Callable[[Flow], LagSource] | None, metrics: MetricsRegistry
    ) -> None:
        self._reader = reader
        self._metrics = metrics
        self._lock = threading.Lock()
        self._monitors: dict[str, LagMonitor] = {}

    def watch(self, flow: Flow) -> None:
        if self._reader is None or not flow.enabled:
            return
        with self._lock:
            if flow.name in self._monitors:
                return
            monitor = self._monitors[flow.name] = LagMonitor(flow, self._reader, self._metrics)
        monitor.start()

    def forget(self, name: str) -> None:
        with self._lock:
            monitor = self._monitors.pop(name, None)
        if monitor is not None:
            monitor.stop()

    def get(self, name: str) -> LagMonitor | None:
        with self._lock:
            return self._monitors.get(name)

    def stop(self) -> None:
        with self._lock:
            monitors, self._monitors = list(self._monitors.values()), {}
        for monitor in monitors:
            monitor.stop()
