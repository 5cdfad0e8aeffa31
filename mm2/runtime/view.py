"""RuntimeView: what the REST API needs of the running mirror, part by part, and nothing more.

mm2.api codes against these protocols, not against MirrorMaker; the composition root
(mm2.cli.runtime_main) hands create_app a MirrorMaker, and mypy checks there that it is one.
A REST operation is its router's handler and one method of a part (ConnectorAdmin,
ConnectorOffsets, FlowAdmin, Leadership, Switchovers); its line here is the signature the
router may call.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from mm2.client.failover import Applied
from mm2.client.lag import LagReport
from mm2.client.plan import FailoverPlan
from mm2.client.recovery import RecoveryPoint
from mm2.client.switchover_report import FlowControl
from mm2.runtime.connector_admin import ConnectorInfo
from mm2.runtime.flows import FlowView
from mm2.runtime.herder import Plugins
from mm2.runtime.liveness import Liveness
from mm2.runtime.metrics import MetricsRegistry
from mm2.runtime.offsets import ConnectorOffset
from mm2.runtime.standby import Leader
from mm2.runtime.status import ConnectorStatus, TaskStatus
from mm2.runtime.switchovers import SwitchoverJob
from mm2.runtime.validation import ConfigCheck

__all__ = [
    "ConnectorsPart",
    "FlowsPart",
    "LeadershipPart",
    "OffsetsPart",
    "RuntimeView",
    "SwitchoversPart",
]


class ConnectorsPart(Protocol):
    """Connectors by name (mm2.runtime.connector_admin.ConnectorAdmin)."""

    def flow_of(self, name: str) -> str: ...
    def names(self) -> list[str]: ...
    def statuses(self) -> list[tuple[str, ConnectorStatus]]: ...
    def info(self, name: str) -> ConnectorInfo: ...
    def status(self, name: str) -> ConnectorStatus: ...
    def task_configs(self, name: str) -> list[dict[str, str]]: ...
    def task_status(self, name: str, task: int) -> TaskStatus: ...
    def put_config(self, name: str, config: Mapping[str, str]) -> tuple[bool, ConnectorInfo]: ...
    def patch_config(self, name: str, patch: Mapping[str, str | None]) -> ConnectorInfo: ...
    def delete(self, name: str) -> None: ...
    def pause(self, name: str) -> None: ...
    def resume(self, name: str) -> None: ...
    def stop(self, name: str) -> None: ...
    def restart(self, name: str, *, include_tasks: bool, only_failed: bool) -> ConnectorStatus: ...
    def restart_task(self, name: str, task: int) -> None: ...
    def validate(self, plugin: str, config: Mapping[str, str]) -> ConfigCheck: ...


class OffsetsPart(Protocol):
    """A connector's offsets, changed only while it is STOPPED (ConnectorOffsets)."""

    def read(self, name: str) -> list[ConnectorOffset]: ...
    def alter(self, name: str, offsets: Sequence[ConnectorOffset]) -> None: ...
    def reset(self, name: str) -> None: ...


class FlowsPart(Protocol):
    """Flows as resources (mm2.runtime.flow_admin.FlowAdmin)."""

    def views(self) -> list[FlowView]: ...
    def view(self, source: str, target: str) -> FlowView: ...
    def lag(self, source: str, target: str) -> LagReport | None: ...
    def group_offsets(
        self, source: str, target: str, timeout: float = ...
    ) -> list[FailoverPlan]: ...
    def recovery_point(self, source: str, target: str, timeout: float = ...) -> RecoveryPoint: ...
    def failover_group(
        self, source: str, target: str, group: str, *, force: bool = ..., timeout: float = ...
    ) -> tuple[FailoverPlan, Applied]: ...
    def pause(self, source: str, target: str) -> None: ...
    def resume(self, source: str, target: str) -> None: ...
    def stop(self, source: str, target: str) -> None: ...
    def add(
        self,
        source: str,
        target: str,
        clusters: Mapping[str, Mapping[str, str]],
        overrides: Mapping[str, str],
    ) -> FlowView: ...
    def remove(self, source: str, target: str) -> None: ...


class LeadershipPart(Protocol):
    """Who runs what (mm2.runtime.leadership.Leadership)."""

    def leads(self, flow: str) -> bool: ...
    def writer(self) -> Leader | None: ...
    def runner(self, flow: str) -> Leader | None: ...
    def leaders(self) -> dict[str, Leader | None]: ...


class SwitchoversPart(Protocol):
    """Planned switchovers this process runs (mm2.runtime.switchovers.Switchovers)."""

    def start(
        self,
        source: str,
        target: str,
        *,
        dry_run: bool,
        start_reverse: bool,
        drain_timeout: float,
        control: FlowControl | None = None,
    ) -> SwitchoverJob: ...
    def job(self, source: str, target: str) -> SwitchoverJob | None: ...


class RuntimeView(Protocol):
    """This process, the figures behind /metrics, and the parts the routers call."""

    @property
    def healthy(self) -> bool:
        """True once the worker has started (GET /health)."""

    @property
    def worker_id(self) -> str: ...

    @property
    def url(self) -> str | None:
        """This process's REST URL as its leader records say it (None: no coordinator)."""

    @property
    def plugins(self) -> Plugins: ...

    @property
    def metrics(self) -> MetricsRegistry:
        """The figures the tasks and lag monitors record (/metrics, /flows/.../partitions)."""

    @property
    def liveness(self) -> Liveness:
        """Heartbeats and checkpoint passes the tasks record (/metrics)."""

    @property
    def connectors(self) -> ConnectorsPart: ...

    @property
    def offsets(self) -> OffsetsPart: ...

    @property
    def flows(self) -> FlowsPart: ...

    @property
    def leadership(self) -> LeadershipPart: ...

    @property
    def switchovers(self) -> SwitchoversPart: ...
