"""Resource use of a mirror's whole process tree (JVMs and Python workers), sampled with psutil."""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

__all__ = ["ResourceSampler", "ResourceUse"]

_DIGITS = re.compile(r"[0-9]+")


@dataclass(frozen=True)
class ResourceUse:
    peak_rss_bytes: int
    cpu_seconds: float
    processes: int  # distinct processes seen in the tree
    # CPU seconds by thread name, digits replaced by N ("rdk:brokerN", "python", ...): which
    # threads of the tree spend it (librdkafka's I/O threads, the Python loops, JVM threads).
    cpu_by_thread: Mapping[str, float] = field(default_factory=dict)
    rss_bytes: int = 0  # summed over the tree at the last sample
    # Proportional set size (Linux): each page counted once over the tree, a page shared by n
    # processes as 1/n in each. Summed RSS counts a shared page in every process that maps it,
    # so a tree of forked workers (Spark's Python workers fork from one daemon that imported
    # mm2 and librdkafka) reads more than it holds; one JVM's PSS is close to its RSS.
    peak_pss_bytes: int = 0
    pss_bytes: int = 0  # summed over the tree at the last sample

    def threads_since(self, earlier: ResourceUse) -> dict[str, float]:
        """CPU seconds by thread name between `earlier` and this use, the largest first."""
        spent = {
            name: cpu - earlier.cpu_by_thread.get(name, 0.0)
            for name, cpu in self.cpu_by_thread.items()
        }
        return dict(sorted(spent.items(), key=lambda item: -item[1]))

    def cpu_seconds_per_million(self, records: int) -> float | None:
        return None if records <= 0 else self.cpu_seconds * 1e6 / records


class ResourceSampler:
    """Samples RSS and PSS (each summed over the tree) and CPU time (per process, last seen) in
    a thread.

    A process that exits between two samples loses the CPU time of its last interval; the mirrors'
    processes live as long as the run, so the loss is at most one interval of a short-lived child.
    """

    def __init__(self, pid: int, interval_s: float = 0.5) -> None:
        self._root = psutil.Process(pid)
        self._interval = interval_s
        self._cpu: dict[int, float] = {}
        self._threads: dict[tuple[int, int], tuple[str, float]] = {}  # (pid, tid) -> name, cpu
        self._peak = 0
        self._last = 0
        self._peak_pss = 0
        self._last_pss = 0
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
        by_thread: dict[str, float] = {}
        for name, cpu in self._threads.values():
            by_thread[name] = by_thread.get(name, 0.0) + cpu
        return ResourceUse(
            self._peak,
            sum(self._cpu.values()),
            len(self._cpu),
            by_thread,
            self._last,
            self._peak_pss,
            self._last_pss,
        )

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self._interval)

    def sample(self) -> None:
        try:
            tree = [self._root, *self._root.children(recursive=True)]
        except psutil.Error:
            return
        rss = pss = 0
        for proc in tree:
            try:
                with proc.oneshot():
                    memory = proc.memory_full_info()  # RSS, and PSS where the platform has it
                    times = proc.cpu_times()
                threads = proc.threads()
            except psutil.Error:
                continue
            rss += memory.rss
            pss += int(getattr(memory, "pss", 0))
            self._cpu[proc.pid] = times.user + times.system
            self._threads.update(_named(proc.pid, threads))
        self._peak = max(self._peak, rss)
        self._last = rss
        self._peak_pss = max(self._peak_pss, pss)
        self._last_pss = pss


def _named(pid: int, threads: list[Any]) -> dict[tuple[int, int], tuple[str, float]]:
    """Each of psutil's threads of `pid` with its name (digits as N, from /proc on Linux: psutil
    gives no thread names) and its CPU seconds."""
    found: dict[tuple[int, int], tuple[str, float]] = {}
    for thread in threads:
        try:
            name = Path(f"/proc/{pid}/task/{thread.id}/comm").read_text().strip()
        except OSError:
            continue  # the thread ended meanwhile
        found[(pid, thread.id)] = (_DIGITS.sub("N", name), thread.user_time + thread.system_time)
    return found
