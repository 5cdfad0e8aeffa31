"""The running mirror as operators manage it: a thin facade over its parts.

This is the runtime view the REST API calls (mm2.runtime.view.RuntimeView). The parts:

- FlowSet (flow_set.py): the flows of mm2.properties plus the stored REST changes, the worker
  with one herder per flow, their lag monitors;
- Leadership (leadership.py): which process runs which flow, elections, the leaders;
- ConnectorAdmin (connector_admin.py): connectors by name, their configs, states, restarts;
- ConnectorOffsets (connector_offsets.py): a connector's offsets, read, altered, reset;
- FlowAdmin (flow_admin.py): flows as resources.

Every change takes effect at once and is written to the ChangeStore before the call returns,
so it survives a restart (see changes.py for how stored changes and mm2.properties combine).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from mm2.client.failover import Applied
from mm2.client.lag import LagReport
from mm2.client.plan import FailoverPlan
from mm2.client.recovery import RecoveryPoint
from mm2.client.switchover_report import FlowControl
from mm2.config import MirrorMakerConfig
from mm2.config.model import Flow
from mm2.runtime.changes import Changes, ChangeStore
from mm2.runtime.connector_admin import ConnectorAdmin, ConnectorInfo
from mm2.runtime.connector_offsets import ConnectorOffsets
from mm2.runtime.flow_admin import FlowAdmin
from mm2.runtime.flow_set import FlowSet
from mm2.runtime.flows import FlowView
from mm2.runtime.herder import Plugins
from mm2.runtime.lag import LagMonitors, LagSource
from mm2.runtime.leadership import Leadership
from mm2.runtime.liveness import Liveness
from mm2.runtime.metrics import MetricsRegistry
from mm2.runtime.offsets import ConnectorOffset, OffsetStore
from mm2.runtime.standby import Coordinator, Leader
from mm2.runtime.status import ConnectorStatus, TaskStatus
from mm2.runtime.switchovers import LocalFlows, SwitchoverJob, Switchovers
from mm2.runtime.task_runner import Backoff
from mm2.runtime.validation import ConfigCheck
from mm2.runtime.worker import Worker

__all__ = ["ConnectorInfo", "MirrorMaker"]


class MirrorMaker:
    """The worker built from mm2.properties plus the stored REST changes."""

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
        self._flows = FlowSet(
            config,
            plugins,
            store,
            leads=lambda flow: self._leadership.leads(flow),  # bound before anything starts
            watch=coordinator.watch if coordinator is not None else lambda _flow: None,
            worker_id=worker_id,
            backoff=backoff,
            lag=lag,
            metrics=metrics or MetricsRegistry(),
            liveness=liveness or Liveness(),
            leader_epoch=lambda flow: self._leadership.epoch(flow),
        )
        self._leadership = Leadership(coordinator, self._flows)
        self._connectors = ConnectorAdmin(self._flows)
        self._offsets = ConnectorOffsets(self._flows, offsets or {})
        self._flow_admin = FlowAdmin(self._flows, self._leadership, self._connectors)
        self._switchovers = Switchovers(self._flow_admin.pair, LocalFlows(self._flow_admin))
        self._leadership.attach()

    # -- the parts, for the composition root and tests --
    @property
    def coordinator(self) -> Coordinator | None:
        return self._leadership.coordinator

    @property
    def worker(self) -> Worker:
        return self._flows.worker

    @property
    def monitors(self) -> LagMonitors:
        return self._flows.monitors

    @property
    def store(self) -> ChangeStore:
        return self._flows.store

    @property
    def metrics(self) -> MetricsRegistry:
        return self._flows.metrics

    @property
    def liveness(self) -> Liveness:
        return self._flows.worker.liveness

    @property
    def worker_id(self) -> str:
        return self._flows.worker.worker_id

    @property
    def url(self) -> str | None:
        coordinator = self._leadership.coordinator
        return None if coordinator is None else coordinator.url

    @property
    def plugins(self) -> Plugins:
        return self._flows.plugins

    # -- lifecycle --
    def start(self) -> None:
        self._flows.start()

    def stop(self) -> None:
        self._flows.stop()
        self._leadership.stop()

    @property
    def healthy(self) -> bool:
        return self._flows.worker.started

    def apply_changes(self, changes: Changes) -> None:
        """REST changes another process published: make the herders match them."""
        self._flows.apply_changes(changes)

    # -- leaders and standbys --
    def runs_here(self, flow: str) -> bool:
        """True when this process runs `flow` (it leads the flow's target cluster)."""
        return self._leadership.leads(flow)

    def writer(self) -> Leader | None:
        """Who must carry out a change: None for this process, else the leader of the cluster
        that keeps REST changes. ConflictError while that cluster has no leader."""
        return self._leadership.writer()

    def runner(self, flow: str) -> Leader | None:
        """Who runs `flow`: None for this process (or when nobody is known to), else its
        target cluster's leader."""
        return self._leadership.runner(flow)

    def leaders(self) -> dict[str, Leader | None]:
        return self._leadership.leaders()

    # -- connectors --
    def connector_flow(self, name: str) -> str:
        return self._connectors.flow_of(name)

    def connector_names(self) -> list[str]:
        return self._connectors.names()

    def statuses(self) -> list[tuple[str, ConnectorStatus]]:
        return self._connectors.statuses()

    def info(self, name: str) -> ConnectorInfo:
        return self._connectors.info(name)

    def status(self, name: str) -> ConnectorStatus:
        return self._connectors.status(name)

    def task_configs(self, name: str) -> list[dict[str, str]]:
        return self._connectors.task_configs(name)

    def task_status(self, name: str, task: int) -> TaskStatus:
        return self._connectors.task_status(name, task)

    def put_config(self, name: str, config: Mapping[str, str]) -> tuple[bool, ConnectorInfo]:
        """Create or replace a connector's config; (created, info)."""
        return self._connectors.put_config(name, config)

    def patch_config(self, name: str, patch: Mapping[str, str | None]) -> ConnectorInfo:
        return self._connectors.patch_config(name, patch)

    def delete(self, name: str) -> None:
        self._connectors.delete(name)

    def pause(self, name: str) -> None:
        self._connectors.pause(name)

    def resume(self, name: str) -> None:
        self._connectors.resume(name)

    def stop_connector(self, name: str) -> None:
        self._connectors.stop(name)

    def restart(self, name: str, *, include_tasks: bool, only_failed: bool) -> ConnectorStatus:
        return self._connectors.restart(name, include_tasks=include_tasks, only_failed=only_failed)

    def restart_task(self, name: str, task: int) -> None:
        self._connectors.restart_task(name, task)

    def validate(self, plugin: str, config: Mapping[str, str]) -> ConfigCheck:
        return self._connectors.validate(plugin, config)

    # -- offsets (Connect: only changed while the connector is STOPPED) --
    def offsets(self, name: str) -> list[ConnectorOffset]:
        return self._offsets.read(name)

    def alter_offsets(self, name: str, offsets: Sequence[ConnectorOffset]) -> None:
        self._offsets.alter(name, offsets)

    def reset_offsets(self, name: str) -> None:
        self._offsets.reset(name)

    # -- flows --
    def flows(self) -> list[FlowView]:
        return self._flow_admin.views()

    def flow(self, source: str, target: str) -> FlowView:
        return self._flow_admin.view(source, target)

    def lag(self, source: str, target: str) -> LagReport | None:
        """The flow's lag as last read from Kafka (None: not read yet, or not monitored)."""
        return self._flow_admin.lag(source, target)

    def group_offsets(self, source: str, target: str, timeout: float = 15.0) -> list[FailoverPlan]:
        return self._flow_admin.group_offsets(source, target, timeout)

    def recovery_point(self, source: str, target: str, timeout: float = 15.0) -> RecoveryPoint:
        return self._flow_admin.recovery_point(source, target, timeout)

    def pause_flow(self, source: str, target: str) -> None:
        self._flow_admin.pause(source, target)

    def resume_flow(self, source: str, target: str) -> None:
        self._flow_admin.resume(source, target)

    def stop_flow(self, source: str, target: str) -> None:
        self._flow_admin.stop(source, target)

    def failover_group(
        self, source: str, target: str, group: str, *, force: bool = False, timeout: float = 15.0
    ) -> tuple[FailoverPlan, Applied]:
        return self._flow_admin.failover_group(source, target, group, force=force, timeout=timeout)

    def start_switchover(
        self,
        source: str,
        target: str,
        *,
        dry_run: bool,
        start_reverse: bool,
        drain_timeout: float,
        control: FlowControl | None = None,
    ) -> SwitchoverJob:
        """A planned switchover of the flow, run by this process (mm2.runtime.switchovers)
        over `control`, by default this process's own flows."""
        return self._switchovers.start(
            source,
            target,
            dry_run=dry_run,
            start_reverse=start_reverse,
            drain_timeout=drain_timeout,
            control=control,
        )

    def switchover_job(self, source: str, target: str) -> SwitchoverJob | None:
        return self._switchovers.job(source, target)

    def add_flow(
        self,
        source: str,
        target: str,
        clusters: Mapping[str, Mapping[str, str]],
        overrides: Mapping[str, str],
    ) -> FlowView:
        """Start a new flow, between known clusters or ones described in `clusters`."""
        return self._flow_admin.add(source, target, clusters, overrides)

    def remove_flow(self, source: str, target: str) -> None:
        self._flow_admin.remove(source, target)
