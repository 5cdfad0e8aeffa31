"""The last hour of each flow's lag and throughput, kept by the process for /ui's charts.

One bounded ring per flow, sampled every `SAMPLE_S` seconds on a daemon thread from figures the
process computes anyway: the lag (records behind, age of the oldest record not copied) as
/flows shows it, the throughput as /metrics' record rate (records/s over the last 30 s, summed
over the flow's partitions). Nothing reads Kafka for it. A flow another process runs is not
sampled here: its figures are that process's, and GET /flows/{source}/{target}/history is
forwarded there (mm2.api.forward). Kept in memory only: a restarted process starts empty.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from mm2.runtime.view import RuntimeView

__all__ = ["KEEP_S", "SAMPLE_S", "FlowHistory", "Sample"]

log = logging.getLogger(__name__)

SAMPLE_S = 10.0
KEEP_S = 3600.0


@dataclass(frozen=True)
class Sample:
    """One flow's figures at `time_ms` (milliseconds since the epoch)."""

    time_ms: int
    lag_records: int
    lag_seconds: float
    records_per_second: float


class FlowHistory:
    """Thread-safe: the sampler thread appends, REST threads read."""

    def __init__(
        self,
        mirror: RuntimeView,
        *,
        every: float = SAMPLE_S,
        keep: float = KEEP_S,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.every = every
        self.keep = keep
        # The bound: an hour of samples at most, whatever the clock does.
        self.size = max(1, round(keep / every))
        self._mirror = mirror
        self._clock = clock
        self._lock = threading.Lock()
        self._rings: dict[tuple[str, str], deque[Sample]] = {}
        self._stopping = threading.Event()

    def sample(self) -> None:
        """One sample of every flow this process runs; a removed flow's ring is dropped."""
        views = self._mirror.flows.views()
        rates: dict[tuple[str, str], float] = {}
        for s in self._mirror.metrics.snapshot():
            rates[(s.source, s.target)] = rates.get((s.source, s.target), 0.0) + s.record_rate
        now = int(self._clock() * 1000)
        with self._lock:
            for v in views:
                if v.runs_on:
                    continue
                ring = self._rings.setdefault((v.source, v.target), deque(maxlen=self.size))
                ring.append(
                    Sample(
                        now,
                        v.lag.records,
                        round(v.lag.max_seconds, 3),
                        round(rates.get((v.source, v.target), 0.0), 3),
                    )
                )
            known = {(v.source, v.target) for v in views}
            for gone in [k for k in self._rings if k not in known]:
                del self._rings[gone]

    def points(self, source: str, target: str) -> list[Sample]:
        """The flow's samples of the last `keep` seconds, oldest first ([]: none yet)."""
        since = int((self._clock() - self.keep) * 1000)
        with self._lock:
            return [s for s in self._rings.get((source, target), ()) if s.time_ms >= since]

    def start(self) -> None:
        """Sample now and every `every` seconds until stop(), or until this history is no
        longer referenced (the thread holds it weakly: an app dropped takes its sampler along)."""
        thread = threading.Thread(
            target=_run,
            args=(weakref.ref(self), self.every, self._stopping),
            name="flow-history",
            daemon=True,
        )
        thread.start()

    def stop(self) -> None:
        self._stopping.set()


def _run(ref: weakref.ref[FlowHistory], every: float, stopping: threading.Event) -> None:
    while not stopping.is_set():
        history = ref()
        if history is None:
            return
        try:
            history.sample()
        except Exception as exc:  # noqa: BLE001 - a missed sample is a gap in a chart, no more
            log.debug("flow history not sampled: %s", exc)
        del history
        stopping.wait(every)
