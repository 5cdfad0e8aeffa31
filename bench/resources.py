"""Resource use of a mirror's whole process tree (JVMs and Python workers), sampled with psutil."""

from __future__ import annotations

import threading
from dataclasses import dataclass

import psutil

__all__ = ["ResourceSampler", "ResourceUse"]


@dataclass(frozen=True)
class ResourceUse:
    peak_rss_bytes: int
    cpu_seconds: float
    processes: int  # distinct processes seen in the tree

    def cpu_seconds_per_million(self, records: int) -> float | None:
        return None if records <= 0 else self.cpu_seconds * 1e6 / records


class ResourceSampler:
    """Samples RSS (summed over the tree) and CPU time (per process, last seen) in a thread.

    A process that exits between two samples loses the CPU time of its last interval; the mirrors'
    processes live as long as the run, so the loss is at most one interval of a short-lived child.
    """

    def __init__(self, pid: int, interval_s: float = 0.5) -> None:
        self._root = psutil.Process(pid)
        self._interval = interval_s
        self._cpu: dict[int, float] = {}
        self._peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="resource-sampler", daemon=True)

    def start(self) -> ResourceSampler:
        self._thread.start()
        return self

    def stop(self) -> ResourceUse:
        """Stop sampling (again: a no-op) and return what was seen."""
        if not self._stop.is_set():
            self._stop.set()
            self._thread.join()
            self.sample()
        return self.use()

    def use(self) -> ResourceUse:
        return ResourceUse(self._peak, sum(self._cpu.values()), len(self._cpu))

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self._interval)

    def sample(self) -> None:
        try:
            tree = [self._root, *self._root.children(recursive=True)]
        except psutil.Error:
            return
        rss = 0
        for proc in tree:
            try:
                with proc.oneshot():
                    rss += proc.memory_info().rss
                    times = proc.cpu_times()
            except psutil.Error:
                continue
            self._cpu[proc.pid] = times.user + times.system
        self._peak = max(self._peak, rss)
