"""The worker: one herder per flow of the resolved mm2.properties, started and stopped together."""

from __future__ import annotations

import logging
import socket
from collections.abc import Mapping

from mm2.runtime.herder import Herder, Plugins
from mm2.runtime.task_runner import Backoff

__all__ = ["Worker"]

log = logging.getLogger(__name__)


class Worker:
    """Holds the herders; `flows` maps "source->target" to its connectors' configs."""

    def __init__(
        self,
        flows: Mapping[str, Mapping[str, Mapping[str, str]]],
        plugins: Plugins,
        *,
        worker_id: str | None = None,
        backoff: Backoff | None = None,
    ) -> None:
        self.worker_id = worker_id or f"{socket.gethostname()}:mm2"
        self.herders = {
            flow: Herder(flow, connectors, plugins, worker_id=self.worker_id, backoff=backoff)
            for flow, connectors in flows.items()
        }

    def start(self) -> None:
        for herder in self.herders.values():
            herder.start()
        log.info("worker %s started %d flow(s)", self.worker_id, len(self.herders))

    def stop(self) -> None:
        for herder in self.herders.values():
            herder.stop()
        log.info("worker %s stopped", self.worker_id)
