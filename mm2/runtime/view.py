"""RuntimeView: what the REST API needs of the running mirror, part by part, and nothing more.

mm2.api codes against this protocol, not against MirrorMaker; the composition root
(mm2.cli.runtime_main) hands create_app a MirrorMaker, and mypy checks there that it is one.
A REST operation is written twice: its router's handler and the method it calls on one of the
parts named here (ConnectorAdmin, ConnectorOffsets, FlowAdmin, Leadership, Switchovers), whose
signatures mypy checks the routers against.
"""

from __future__ import annotations

from typing import Protocol

from mm2.runtime.connector_admin import ConnectorAdmin
from mm2.runtime.connector_offsets import ConnectorOffsets
from mm2.runtime.flow_admin import FlowAdmin
from mm2.runtime.herder import Plugins
from mm2.runtime.leadership import Leadership
from mm2.runtime.liveness import Liveness
from mm2.runtime.metrics import MetricsRegistry
from mm2.runtime.switchovers import Switchovers

__all__ = ["RuntimeView"]


class RuntimeView(Protocol):
    """This process, the figures behind /metrics, and the parts the routers call (attributes of
    MirrorMaker, the routers only read them)."""

    worker_id: str
    plugins: Plugins
    # The figures the tasks and lag monitors record (/metrics, /flows/.../partitions).
    metrics: MetricsRegistry
    # Heartbeats and checkpoint passes the tasks record (/metrics).
    liveness: Liveness
    connectors: ConnectorAdmin
    offsets: ConnectorOffsets
    flows: FlowAdmin
    leadership: Leadership
    switchovers: Switchovers

    @property
    def healthy(self) -> bool:
        """True once the worker has started (GET /health)."""

    @property
    def url(self) -> str | None:
        """This process's REST URL as its leader records say it (None: no coordinator)."""
