"""FlowConnector: what the three connectors of a flow share (its config and the flow it names)."""

from __future__ import annotations

from collections.abc import Mapping

from mm2.config.model import Flow
from mm2.connect.spi import Connector

__all__ = ["FlowConnector"]


class FlowConnector(Connector):
    """A connector of one flow; each runs at most one task (the source's plans the copy tasks)."""

    _config: dict[str, str]
    _flow: Flow

    def start(self, config: Mapping[str, str]) -> None:
        self._config = dict(config)
        self._flow = Flow.for_connector(config)

    def one_task(self, runs: bool) -> list[dict[str, str]]:
        """The flow's one task, with task.index 0, while `runs`; else none."""
        return [{**self._config, "task.index": "0"}] if runs else []
