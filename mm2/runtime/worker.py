"""The worker: one herder per flow, started and stopped together; flows come and go at run time."""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable, Iterable, Mapping

from mm2.connect.spi import LeaderEpoch
from mm2.errors import ConflictError, NotFoundError
from mm2.runtime.herder import Herder, Plugins, Transform
from mm2.runtime.liveness import Liveness
from mm2.runtime.metrics import MetricsRegistry
from mm2.runtime.status import TargetState
from mm2.runtime.task_runner import STOP_TIMEOUT_S, Backoff

__all__ = ["Worker"]

log = logging.getLogger(__name__)

FlowConnectors = Mapping[str, Mapping[str, str]]


class Worker:
    """Holds the herders; `flows` maps "source->target" to its connectors' configs."""

    def __init__(
        self,
        flows: Mapping[str, FlowConnectors],
        plugins: Plugins,
        *,
        worker_id: str | None = None,
        backoff: Backoff | None = None,
        targets: Mapping[str, Mapping[str, TargetState]] | None = None,
        leads: Callable[[str], bool] = lambda _flow: True,
        transform: Transform | None = None,
        workers: Mapping[str, Mapping[str, str]] | None = None,
        metrics: MetricsRegistry | None = None,
        liveness: Liveness | None = None,
        leader_epoch: Callable[[str], LeaderEpoch | None] = lambda _flow: None,
    ) -> None:
        """`targets` maps flow -> connector -> a first target state other than STARTED;
        `leads(flow)` says whether this process runs the flow (else it stays idle, a standby);
        `transform` resolves a connector's config when it starts; `workers` maps flow -> the
        worker keys its connectors start with (see Herder); `metrics` and `liveness` go to
        every herder's tasks (fresh ones without them)."""
        self._leads = leads
        self._leader_epoch = leader_epoch
        self._transform = transform
        self.metrics = metrics or MetricsRegistry()
        self.liveness = liveness or Liveness()
        self.worker_id = worker_id or f"{socket.gethostname()}:mm2"
        self.plugins = plugins
        self._backoff = backoff
        self._lock = threading.RLock()
        self._started = False
        self.herders: dict[str, Herder] = {
            flow: self._herder(
                flow, connectors, (targets or {}).get(flow), (workers or {}).get(flow)
            )
            for flow, connectors in flows.items()
        }

    def _herder(
        self,
        flow: str,
        connectors: FlowConnectors,
        targets: Mapping[str, TargetState] | None,
        worker: Mapping[str, str] | None,
    ) -> Herder:
        return Herder(
            flow,
            connectors,
            self.plugins,
            worker_id=self.worker_id,
            backoff=self._backoff,
            targets=targets,
            transform=self._transform,
            worker=worker,
            metrics=self.metrics,
            liveness=self.liveness,
            leader_epoch=lambda: self._leader_epoch(flow),
        )

    @property
    def started(self) -> bool:
        return self._started

    def start(self) -> None:
        with self._lock:
            running = [h for f, h in self.herders.items() if self._leads(f)]
            for herder in running:
                herder.start()
            self._started = True
        log.info(
            "worker %s started %d of %d flow(s)", self.worker_id, len(running), len(self.herders)
        )

    def lead(self, flows: Iterable[str], leading: bool) -> None:
        """Start (this process was elected) or stop (it was deposed) the flows' herders."""
        with self._lock:
            herders = [self.herders[f] for f in flows if f in self.herders]
            if not self._started:
                return
            for herder in herders:
                if leading and not herder.active:
                    herder.start()
                elif not leading and herder.active:
                    herder.stop()

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> None:
        """Stop every flow's tasks side by side, waiting at most `timeout` seconds in all."""
        deadline = time.monotonic() + timeout
        with self._lock:
            self._started = False
            herders = list(self.herders.values())
            for herder in herders:
                herder.signal_stop()
            for herder in herders:
                herder.stop(max(0.0, deadline - time.monotonic()))
        log.info("worker %s stopped", self.worker_id)

    def herder(self, flow: str) -> Herder:
        with self._lock:
            try:
                return self.herders[flow]
            except KeyError:
                raise NotFoundError(f"no replication flow {flow}") from None

    def add_flow(
        self,
        flow: str,
        connectors: FlowConnectors,
        targets: Mapping[str, TargetState] | None = None,
        worker: Mapping[str, str] | None = None,
    ) -> Herder:
        """A new herder for `flow`, started at once when the worker runs."""
        with self._lock:
            if flow in self.herders:
                raise ConflictError(f"replication flow {flow} exists already")
            herder = self.herders[flow] = self._herder(flow, connectors, targets, worker)
            if self._started and self._leads(flow):
                herder.start()
        log.info("worker %s: flow %s added", self.worker_id, flow)
        return herder

    def remove_flow(self, flow: str) -> None:
        with self._lock:
            herder = self.herder(flow)
            herder.stop()
            del self.herders[flow]
        log.info("worker %s: flow %s removed", self.worker_id, flow)
