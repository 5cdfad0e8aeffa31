"""Memory and CPU of the whole process tree: this process, Spark's JVM and its Python workers.

`process_resident_memory_bytes` (prometheus_client) covers this Python process only, a small
part of a mirror running Spark in local mode. Read with psutil at scrape time, by role:

- `mirror`: this process (the Spark driver, REST API, connectors' tasks);
- `spark-jvm`: a Java process below it (Spark's driver JVM in local mode);
- `spark-python`: a Python process below the JVM (the worker daemon and the copy tasks);
- `other`: anything else below it (kinit, keytool).

CPU seconds are cumulative and include the processes that have ended since (their last
reading is kept), so `rate()` works across Python workers that Spark starts and reaps.
On a Spark cluster the executors run elsewhere and are not counted here.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from typing import Literal

import psutil
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

__all__ = ["ProcessTreeCollector", "Role"]

Role = Literal["mirror", "spark-jvm", "spark-python", "other"]
ROLES: tuple[Role, ...] = ("mirror", "spark-jvm", "spark-python", "other")
_Key = tuple[int, float]  # pid, create time: a reused pid is another process


def _role(process: psutil.Process, parents: dict[int, Role], root: int) -> Role:
    if process.pid == root:
        return "mirror"
    try:
        name = process.name().lower()
        parent = parents.get(process.ppid(), "other")
    except psutil.Error:
        return "other"
    if name.startswith("java"):
        return "spark-jvm"
    if name.startswith("python") and parent in ("spark-jvm", "spark-python"):
        return "spark-python"
    return "other"


class ProcessTreeCollector(Collector):
    """`mm2_process_tree_*` metrics of the process `pid` (this one by default) and all below."""

    def __init__(self, pid: int | None = None) -> None:
        self._root = psutil.Process(pid or os.getpid())
        self._lock = threading.Lock()
        self._cpu_seen: dict[_Key, tuple[Role, float]] = {}
        self._cpu_ended: dict[Role, float] = dict.fromkeys(ROLES, 0.0)

    def collect(self) -> Iterator[Metric]:
        rss = GaugeMetricFamily(
            "mm2_process_tree_resident_memory_bytes",
            "resident memory of the mirror's process tree by role (shared pages count in each "
            "process, as RSS does)",
            labels=["role"],
        )
        pss = GaugeMetricFamily(
            "mm2_process_tree_proportional_memory_bytes",
            "proportional set size of the mirror's process tree by role (shared pages divided "
            "among their sharers; Linux only)",
            labels=["role"],
        )
        cpu = CounterMetricFamily(
            "mm2_process_tree_cpu_seconds",
            "CPU time (user and system) of the mirror's process tree by role, ended processes "
            "included",
            labels=["role"],
        )
        count = GaugeMetricFamily(
            "mm2_process_tree_processes", "processes in the mirror's tree by role", labels=["role"]
        )
        memory: dict[Role, int] = dict.fromkeys(ROLES, 0)
        proportional: dict[Role, int] = dict.fromkeys(ROLES, 0)
        has_pss = False
        processes: dict[Role, int] = dict.fromkeys(ROLES, 0)
        with self._lock:
            seen: dict[_Key, tuple[Role, float]] = {}
            parents: dict[int, Role] = {}
            try:
                tree = [self._root, *self._root.children(recursive=True)]
            except psutil.Error:
                tree = [self._root]
            for process in tree:  # children(recursive) lists parents before their children
                role = _role(process, parents, self._root.pid)
                parents[process.pid] = role
                try:
                    with process.oneshot():
                        times = process.cpu_times()
                        info = process.memory_info()
                        key = (process.pid, process.create_time())
                    try:
                        full = process.memory_full_info()
                        proportional[role] += int(getattr(full, "pss", 0))
                        has_pss = has_pss or hasattr(full, "pss")
                    except (psutil.AccessDenied, AttributeError):
                        pass
                except psutil.Error:
                    continue  # ended while we looked
                memory[role] += int(info.rss)
                processes[role] += 1
                seen[key] = (role, float(times.user + times.system))
            for key, (role, seconds) in self._cpu_seen.items():
                if key not in seen:
                    self._cpu_ended[role] += seconds
            self._cpu_seen = seen
            used = dict(self._cpu_ended)
            for role, seconds in seen.values():
                used[role] += seconds
        for role in ROLES:
            rss.add_metric([role], memory[role])
            cpu.add_metric([role], used[role])
            count.add_metric([role], processes[role])
            if has_pss:
                pss.add_metric([role], proportional[role])
        yield from (rss, pss, cpu, count)
