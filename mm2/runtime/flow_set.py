"""The flows this process knows (mm2.properties plus the stored REST changes) and their worker.

Connector configs are kept and shown as given, `${provider:...}` references unresolved; they
are resolved only when a connector starts (or its offsets are read), and only through the
providers mm2.properties declares, as Connect's worker does. Nothing given over REST can
declare a provider.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping

from mm2.config import MirrorMakerConfig, PropertiesFile, load_properties
from mm2.config.model import Flow
from mm2.config.providers import Providers
from mm2.connect.spi import LeaderEpoch
from mm2.errors import ConfigError
from mm2.runtime.changes import Changes, ChangeStore
from mm2.runtime.flows import stored_properties
from mm2.runtime.herder import Herder, Plugins
from mm2.runtime.lag import LagMonitors, LagSource
from mm2.runtime.liveness import Liveness
from mm2.runtime.metrics import MetricsRegistry
from mm2.runtime.naming import connector_name, find_connector
from mm2.runtime.status import TargetState
from mm2.runtime.task_runner import Backoff
from mm2.runtime.worker import Worker

__all__ = ["FlowSet"]

log = logging.getLogger(__name__)


class FlowSet:
    """The flows wanted now, the worker with one herder per flow, and their lag monitors.

    `lock` serialises every change to the flows, their connectors and the stored changes.
    """

    def __init__(
        self,
        config: MirrorMakerConfig,
        plugins: Plugins,
        store: ChangeStore,
        *,
        leads: Callable[[str], bool],
        watch: Callable[[Flow], None],
        worker_id: str | None = None,
        backoff: Backoff | None = None,
        lag: Callable[[Flow], LagSource] | None = None,
        metrics: MetricsRegistry,
        liveness: Liveness,
        leader_epoch: Callable[[str], LeaderEpoch | None] = lambda _flow: None,
    ) -> None:
        """`leads(flow)`: whether this process runs the flow; `watch(flow)`: called for each
        flow added after this (the coordinator watches its target cluster); `metrics` and
        `liveness` go to the tasks and the lag monitors; `leader_epoch(flow)` to the tasks."""
        self.file = config
        self.plugins = plugins
        self.store = store
        self.lock = threading.RLock()
        self.metrics = metrics
        self.monitors = LagMonitors(lag, metrics)
        self.providers = Providers.from_settings(config.raw)
        self._watch = watch
        self._file_flows = {f.name for f in config.flows}
        changes = store.changes
        try:
            resolved = self.resolve(changes)
        except ConfigError as exc:
            raise ConfigError(f"{exc} (with the changes stored in {store.path})") from None
        self.flows = self._wanted(resolved, changes)
        self.worker = Worker(
            {name: self.connector_configs(f, changes) for name, f in self.flows.items()},
            plugins,
            worker_id=worker_id,
            backoff=backoff,
            targets={name: self.targets(name, changes) for name in self.flows},
            leads=leads,
            transform=self.providers.resolve_all,
            workers={name: f.worker_keys() for name, f in self.flows.items()},
            metrics=metrics,
            liveness=liveness,
            leader_epoch=leader_epoch,
        )

    def in_file(self, name: str) -> bool:
        return name in self._file_flows

    def _wanted(self, resolved: MirrorMakerConfig, changes: Changes) -> dict[str, Flow]:
        wanted = (self._file_flows | set(changes.added_flows)) - set(changes.removed_flows)
        return {f.name: f for f in resolved.flows if f.name in wanted}

    # -- building flows from the file and the stored changes --
    def resolve(self, changes: Changes) -> MirrorMakerConfig:
        raw = dict(self.file.raw)
        raw.update(stored_properties(changes))
        if changes.clusters:
            raw["clusters"] = ", ".join([*self.file.clusters, *changes.clusters])
        # The file's lines kept for messages; its warnings were logged when it was read.
        props = PropertiesFile(self.file.path, raw, dict(self.file.lines))
        return load_properties(props, log_warnings=False)

    def connector_configs(self, flow: Flow, changes: Changes) -> dict[str, dict[str, str]]:
        out: dict[str, dict[str, str]] = {}
        for plain in flow.connectors:
            if plain not in self.plugins:
                log.warning("%s: %s is not available in this build yet", flow.name, plain)
            elif connector_name(flow.name, plain) not in changes.deleted_connectors:
                out[plain] = dict(flow.connectors[plain])  # unresolved, as given
        prefix = connector_name(flow.name, "")
        for full, config in changes.connector_configs.items():
            if full.startswith(prefix) and full[len(prefix) :] in self.plugins:
                out[full[len(prefix) :]] = dict(config)
        return out

    @staticmethod
    def targets(flow: str, changes: Changes) -> dict[str, TargetState]:
        prefix = connector_name(flow, "")
        return {
            full[len(prefix) :]: state
            for full, state in changes.target_states.items()
            if full.startswith(prefix)
        }

    # -- connectors by name --
    def pairs(self) -> list[tuple[str, str]]:
        """(flow, plain connector name) of every connector."""
        return [(f, p) for f, h in list(self.worker.herders.items()) for p in h.connector_names]

    def locate(self, name: str) -> tuple[Herder, str, str]:
        """(herder, plain name, full name) of connector `name`; NotFoundError if none."""
        enabled = [f for f, flow in self.flows.items() if flow.enabled]
        flow, plain = find_connector(name, self.pairs(), enabled)
        return self.worker.herder(flow), plain, connector_name(flow, plain)

    # -- changes --
    def apply_changes(self, changes: Changes) -> None:
        """REST changes another process published: make the herders match them."""
        with self.lock:
            try:
                resolved = self.resolve(changes)
            except ConfigError as exc:
                log.error("REST changes from Kafka not applied: %s", exc)
                return
            self.store.replace(changes)
            flows = self._wanted(resolved, changes)
            before = self.flows
            for name in [n for n in self.worker.herders if n not in flows]:
                self._drop(name)
            self.flows = flows
            for name, flow in flows.items():
                configs = self.connector_configs(flow, changes)
                targets = self.targets(name, changes)
                if name in self.worker.herders:
                    _reconcile(self.worker.herder(name), configs, targets)
                else:
                    self._watch(flow)
                    self.worker.add_flow(name, configs, targets, flow.worker_keys())
                if self.worker.started and before.get(name) != flow:
                    self.monitors.forget(name)  # new, or its settings changed
                    self.monitors.watch(flow)

    def add(self, flow: Flow, changes: Changes) -> None:
        """Run `flow` (already in the stored `changes`)."""
        self.flows[flow.name] = flow
        self._watch(flow)
        self.worker.add_flow(
            flow.name,
            self.connector_configs(flow, changes),
            self.targets(flow.name, changes),
            flow.worker_keys(),
        )
        if self.worker.started:
            self.monitors.watch(flow)

    def remove(self, name: str) -> None:
        self._drop(name)
        self.flows.pop(name, None)

    def _drop(self, name: str) -> None:
        """The flow's herder, lag monitor and metrics series gone."""
        self.worker.remove_flow(name)
        self.monitors.forget(name)
        flow = self.flows.get(name)
        if flow is not None:
            self.metrics.forget_flow(flow.source, flow.target)

    # -- lifecycle --
    def start(self) -> None:
        self.worker.start()
        for flow in self.flows.values():
            self.monitors.watch(flow)

    def stop(self) -> None:
        self.monitors.stop()
        self.worker.stop()


def _reconcile(
    herder: Herder, configs: Mapping[str, Mapping[str, str]], targets: Mapping[str, TargetState]
) -> None:
    """Give the herder's connectors these configs and target states, touching only what
    differs."""
    for plain in herder.connector_names:
        if plain not in configs:
            herder.delete_connector(plain)
    for plain, config in configs.items():
        if plain not in herder.connector_names or herder.config(plain) != dict(config):
            herder.put_connector(plain, config)
        target = targets.get(plain, "STARTED")
        if herder.target_state(plain) != target:
            {"PAUSED": herder.pause, "STARTED": herder.resume, "STOPPED": herder.stop_connector}[
                target
            ](plain)
