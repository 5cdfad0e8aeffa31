"""The running mirror as operators manage it: its parts, built once and wired together.

The REST API calls the parts directly (mm2.runtime.view.RuntimeView says which it sees):

- FlowSet (flow_set.py): the flows of mm2.properties plus the stored REST changes, the worker
  with one herder per flow, their lag monitors;
- Leadership (leadership.py): which process runs which flow, elections, the leaders;
- ConnectorAdmin (connector_admin.py): connectors by name, their configs, states, restarts;
- ConnectorOffsets (connector_offsets.py): a connector's offsets, read, altered, reset;
- FlowAdmin (flow_admin.py): flows as resources;
- Switchovers (switchovers.py): planned switchovers run by this process.

Every change takes effect at once and is written to the ChangeStore before the call returns,
so it survives a restart (see changes.py for how stored changes and mm2.properties combine).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from mm2.config import MirrorMakerConfig
from mm2.config.model import Flow
from mm2.runtime.changes import Changes, ChangeStore
from mm2.runtime.connector_admin import ConnectorAdmin, ConnectorInfo
from mm2.runtime.connector_offsets import ConnectorOffsets
from mm2.runtime.flow_admin import FlowAdmin
from mm2.runtime.flow_set import FlowSet
from mm2.runtime.herder import Plugins
from mm2.runtime.lag import LagSource
from mm2.runtime.leadership import Leadership
from mm2.runtime.liveness import Liveness
from mm2.runtime.metrics import MetricsRegistry
from mm2.runtime.offsets import OffsetStore
from mm2.runtime.standby import Coordinator
from mm2.runtime.switchovers import LocalFlows, Switchovers
from mm2.runtime.task_runner import Backoff

__all__ = ["ConnectorInfo", "MirrorMaker"]


class MirrorMaker:
    """The worker built from mm2.properties plus the stored REST changes, and the parts the
    API calls: `connectors`, `offsets`, `flows`, `leadership`, `switchovers`."""

    def __init__(
        self,
        config: MirrorMakerConfig,
        plugins: Plugins,
        store: ChangeStore,
        *,
        offsets: Mapping[str, OffsetStore] | None = None,
        worker_id: str | None = None,
        backoff: Backoff | None = None,
        coordinator: Coordinator | None = None,
        lag: Callable[[Flow], LagSource] | None = None,
        metrics: MetricsRegistry | None = None,
        liveness: Liveness | None = None,
    ) -> None:
        """With a `coordinator`, this process runs only the flows into the target clusters it
        leads, and REST changes are kept in Kafka (see mm2.runtime.standby).

        `metrics` and `liveness` are where the tasks and lag monitors record and what the API
        reads (mm2.cli.runtime_main makes them); a mirror built without them gets its own."""
        self._set = FlowSet(
            config,
            plugins,
            store,
            leads=lambda flow: self.leadership.leads(flow),  # bound before anything starts
            watch=coordinator.watch if coordinator is not None else lambda _flow: None,
            worker_id=worker_id,
            backoff=backoff,
            lag=lag,
            metrics=metrics or MetricsRegistry(),
            liveness=liveness or Liveness(),
            leader_epoch=lambda flow: self.leadership.epoch(flow),
        )
        # The worker (its herders), and what the API shows of this process: fixed once built.
        self.worker = self._set.worker
        self.worker_id = self.worker.worker_id
        self.plugins = self._set.plugins
        self.metrics = self._set.metrics
        self.liveness = self.worker.liveness
        self.leadership = Leadership(coordinator, self._set)
        self.connectors = ConnectorAdmin(self._set)
        self.offsets = ConnectorOffsets(self._set, offsets or {})
        self.flows = FlowAdmin(self._set, self.leadership, self.connectors)
        self.switchovers = Switchovers(self.flows.pair, LocalFlows(self.flows))
        self.leadership.attach()

    # -- this process, as the API shows it --
    @property
    def url(self) -> str | None:
        coordinator = self.leadership.coordinator
        return None if coordinator is None else coordinator.url

    @property
    def healthy(self) -> bool:
        return self._set.worker.started

    # -- lifecycle --
    def start(self) -> None:
        self._set.start()

    def stop(self) -> None:
        self._set.stop()
        self.leadership.stop()

    def apply_changes(self, changes: Changes) -> None:
        """REST changes another process published: make the herders match them."""
        self._set.apply_changes(changes)
