"""The running mirror as operators manage it: flows and connectors by name, changes kept.

This is the runtime view the REST API calls. Every change takes effect at once and is written
to the ChangeStore before the call returns, so it survives a restart (see changes.py for how
stored changes and mm2.properties combine).

Connector configs are kept and shown as given, `${provider:...}` references unresolved; they
are resolved only when a connector starts (or its offsets are read), and only through the
providers mm2.properties declares, as Connect's worker does. Nothing given over REST can
declare a provider.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable, Mapping, Sequence

from mm2.client.lag import LagReport
from mm2.config import MirrorMakerConfig, PropertiesFile, load_properties
from mm2.config.model import HIDDEN, Flow, is_password
from mm2.config.providers import ProviderProblem, Providers
from mm2.errors import BadRequestError, ConfigError, ConflictError, MM2Error, NotFoundError
from mm2.runtime.changes import Changes, ChangeStore
from mm2.runtime.flow_state import flow_state
from mm2.runtime.flows import (
    FlowView,
    flow_view,
    new_flow_edit,
    removed_flow_edit,
    stored_properties,
)
from mm2.runtime.herder import Herder, Plugins
from mm2.runtime.lag import LagMonitors, LagSource
from mm2.runtime.naming import connector_name, find_connector, flow_name, split_flow
from mm2.runtime.offsets import ConnectorOffset, OffsetStore
from mm2.runtime.standby import Coordinator, Leader
from mm2.runtime.status import ConnectorStatus, TargetState, TaskStatus
from mm2.runtime.task_runner import Backoff
from mm2.runtime.validation import ConfigCheck, plugin_name, validate_connector_config
from mm2.runtime.worker import Worker

__all__ = ["ConnectorInfo", "MirrorMaker"]

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class ConnectorInfo:
    """Connect's ConnectorInfo: name, config (secrets as stored), task ids and type."""

    name: str
    flow: str
    config: dict[str, str]
    tasks: tuple[int, ...]
    type: str


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
    ) -> None:
        """With a `coordinator`, this process runs only the flows into the target clusters it
        leads, and REST changes are kept in Kafka (see mm2.runtime.standby)."""
        self._file = config
        self.coordinator = coordinator
        self.monitors = LagMonitors(lag)
        self._plugins = plugins
        self._store = store
        self._offsets = dict(offsets or {})
        self._lock = threading.RLock()
        self._file_flows = {f.name for f in config.flows}
        self._providers = Providers.from_settings(config.raw)
        changes = store.changes
        try:
            resolved = self._resolve(changes)
        except ConfigError as exc:
            raise ConfigError(f"{exc} (with the changes stored in {store.path})") from None
        wanted = (self._file_flows | set(changes.added_flows)) - set(changes.removed_flows)
        self._flows = {f.name: f for f in resolved.flows if f.name in wanted}
        self.worker = Worker(
            {name: self._connector_configs(f, changes) for name, f in self._flows.items()},
            plugins,
            worker_id=worker_id,
            backoff=backoff,
            targets={name: self._targets(name, changes) for name in self._flows},
            leads=self._leads,
            transform=self._providers.resolve_all,
            workers={name: f.worker_keys() for name, f in self._flows.items()},
        )
        if coordinator is not None:
            store.publish = coordinator.publish
            coordinator.on_changes = self.apply_changes
            coordinator.on_lead = self._lead
            for flow in self._flows.values():
                coordinator.watch(flow)
            latest = coordinator.changes()
            if latest is not None and latest != changes:
                self.apply_changes(latest)  # published while this worker was being built

    # -- leaders and standbys --
    def runs_here(self, flow: str) -> bool:
        """True when this process runs `flow` (it leads the flow's target cluster)."""
        return self._leads(flow)

    def _leads(self, flow: str) -> bool:
        if self.coordinator is None:
            return True
        found = self._flows.get(flow)
        return found is not None and self.coordinator.leads(found.target)

    def _lead(self, cluster: str, leading: bool) -> None:
        coordinator = self.coordinator
        with self._lock:
            flows = [name for name, f in self._flows.items() if f.target == cluster]
            local = self._store.changes
            if (
                leading
                and coordinator is not None
                and cluster == coordinator.home
                and not coordinator.has_stored_changes
                and local != Changes()
            ):
                # An upgrade: changes made before they were kept in Kafka move there.
                log.info("REST changes from %s now kept in Kafka", self._store.path)
                try:
                    coordinator.publish(local)
                except MM2Error as exc:
                    log.error("REST changes not written to %s: %s", cluster, exc)
        self.worker.lead(flows, leading)

    def writer(self) -> Leader | None:
        """Who must carry out a change: None for this process, else the leader of the cluster
        that keeps REST changes. ConflictError while that cluster has no leader."""
        coordinator = self.coordinator
        if coordinator is None or coordinator.leads(coordinator.home):
            return None
        leader = coordinator.leader(coordinator.home)
        if leader is None:
            raise ConflictError(
                f"no leader for {coordinator.home} yet (an election is under way); try again"
            )
        return leader

    def runner(self, flow: str) -> Leader | None:
        """Who runs `flow`: None for this process (or when nobody is known to), else its
        target cluster's leader."""
        coordinator, found = self.coordinator, self._flows.get(flow)
        if coordinator is None or found is None or coordinator.leads(found.target):
            return None
        return coordinator.leader(found.target)

    def connector_flow(self, name: str) -> str:
        return self._locate(name)[0].flow

    def leaders(self) -> dict[str, Leader | None]:
        return {} if self.coordinator is None else self.coordinator.leaders()

    def apply_changes(self, changes: Changes) -> None:
        """REST changes another process published: make the herders match them."""
        with self._lock:
            try:
                resolved = self._resolve(changes)
            except ConfigError as exc:
                log.error("REST changes from Kafka not applied: %s", exc)
                return
            self._store.replace(changes)
            wanted = (self._file_flows | set(changes.added_flows)) - set(changes.removed_flows)
            flows = {f.name: f for f in resolved.flows if f.name in wanted}
            before = self._flows
            for name in [n for n in self.worker.herders if n not in flows]:
                self.worker.remove_flow(name)
                self.monitors.forget(name)
            self._flows = flows
            for name, flow in flows.items():
                configs = self._connector_configs(flow, changes)
                targets = self._targets(name, changes)
                if name in self.worker.herders:
                    _reconcile(self.worker.herder(name), configs, targets)
                else:
                    if self.coordinator is not None:
                        self.coordinator.watch(flow)
                    self.worker.add_flow(name, configs, targets, flow.worker_keys())
                if self.worker.started and before.get(name) != flow:
                    self.monitors.forget(name)  # new, or its settings changed
                    self.monitors.watch(flow)

    # -- building flows from the file and the stored changes --
    def _resolve(self, changes: Changes) -> MirrorMakerConfig:
        raw = dict(self._file.raw)
        raw.update(stored_properties(changes))
        if changes.clusters:
            raw["clusters"] = ", ".join([*self._file.clusters, *changes.clusters])
        return load_properties(PropertiesFile(self._file.path, raw))

    def _connector_configs(self, flow: Flow, changes: Changes) -> dict[str, dict[str, str]]:
        out: dict[str, dict[str, str]] = {}
        for plain in flow.connectors:
            if plain not in self._plugins:
                log.warning("%s: %s is not available in this build yet", flow.name, plain)
            elif connector_name(flow.name, plain) not in changes.deleted_connectors:
                out[plain] = dict(flow.connectors[plain])  # unresolved, as given
        prefix = connector_name(flow.name, "")
        for full, config in changes.connector_configs.items():
            if full.startswith(prefix) and full[len(prefix) :] in self._plugins:
                out[full[len(prefix) :]] = dict(config)
        return out

    @staticmethod
    def _targets(flow: str, changes: Changes) -> dict[str, TargetState]:
        prefix = connector_name(flow, "")
        return {
            full[len(prefix) :]: state
            for full, state in changes.target_states.items()
            if full.startswith(prefix)
        }

    # -- lifecycle --
    def start(self) -> None:
        self.worker.start()
        for flow in self._flows.values():
            self.monitors.watch(flow)

    def stop(self) -> None:
        self.monitors.stop()
        self.worker.stop()
        if self.coordinator is not None:
            self.coordinator.stop()  # leaves the groups: a standby is elected at once

    @property
    def healthy(self) -> bool:
        return self.worker.started

    @property
    def plugins(self) -> Plugins:
        return self._plugins

    # -- connectors --
    def _pairs(self) -> list[tuple[str, str]]:
        return [(f, p) for f, h in list(self.worker.herders.items()) for p in h.connector_names]

    def _locate(self, name: str) -> tuple[Herder, str, str]:
        enabled = [f for f, flow in self._flows.items() if flow.enabled]
        flow, plain = find_connector(name, self._pairs(), enabled)
        return self.worker.herder(flow), plain, connector_name(flow, plain)

    def connector_names(self) -> list[str]:
        return sorted(connector_name(f, p) for f, p in self._pairs())

    def info(self, name: str) -> ConnectorInfo:
        herder, plain, full = self._locate(name)
        config = {**herder.config(plain), "name": full}
        tasks = tuple(range(len(herder.task_configs(plain))))
        return ConnectorInfo(full, herder.flow, config, tasks, herder.plugin(plain).connector_type)

    def status(self, name: str) -> ConnectorStatus:
        herder, plain, full = self._locate(name)
        return dataclasses.replace(herder.status(plain), name=full)

    def task_configs(self, name: str) -> list[dict[str, str]]:
        herder, plain, _ = self._locate(name)
        return herder.task_configs(plain)

    def task_status(self, name: str, task: int) -> TaskStatus:
        for status in self.status(name).tasks:
            if status.id == task:
                return status
        raise NotFoundError(f"Task {name}-{task} not found")

    def _where_new(self, name: str) -> tuple[str, str]:
        """(flow, plain) for a connector about to be created under `name`."""
        found = [
            (flow, name[len(connector_name(flow, "")) :])
            for flow in list(self.worker.herders)
            if name.startswith(connector_name(flow, ""))
            and name[len(connector_name(flow, "")) :] in self._plugins
        ]
        if len(found) == 1:
            return found[0]
        if found:
            raise ConflictError(f"connector name {name!r} is ambiguous: flow aliases contain dots")
        raise NotFoundError(
            f"Connector {name} not found; new connectors are named "
            "<source>.<target>.<ConnectorClass> within a flow (add flows with POST /flows)"
        )

    def put_config(self, name: str, config: Mapping[str, str]) -> tuple[bool, ConnectorInfo]:
        """Create or replace a connector's config; (created, info)."""
        with self._lock:
            try:
                herder, plain, full = self._locate(name)
                current = herder.config(plain)
            except NotFoundError:
                flow, plain = self._where_new(name)
                herder, full, current = self.worker.herder(flow), connector_name(flow, plain), {}
            given = config.get("name")
            if given is not None and given not in (full, plain, name):
                raise BadRequestError(
                    f"Connector name configuration ({given}) doesn't match connector name "
                    f"in the URL ({name})",
                    {"name": [f"must be {full}"]},
                )
            body = {k: current.get(k, v) if v == HIDDEN and is_password(k) else v
                    for k, v in config.items()}  # fmt: skip
            hidden = [k for k, v in body.items() if v == HIDDEN and is_password(k)]
            if hidden:
                raise BadRequestError(
                    f"{', '.join(hidden)}: {HIDDEN} stands for a stored secret, and none is "
                    "stored for this connector; send the value itself",
                    {k: ["no stored secret"] for k in hidden},
                )
            source, target = split_flow(herder.flow)
            body.update({"name": plain})
            for key, alias in (("source.cluster.alias", source), ("target.cluster.alias", target)):
                if body.get(key, alias) != alias:
                    raise BadRequestError(
                        f"{key} must be {alias!r}: the connector belongs to flow {herder.flow}",
                        {key: [f"must be {alias}"]},
                    )
            if (given_class := plugin_name(body)) and given_class != plain:
                raise BadRequestError(
                    f"connector.class {body['connector.class']} does not match the connector "
                    f"name {full} (a {plain})",
                    {"connector.class": [f"must be {plain}"]},
                )
            if "mm2.state.dir" in self._file.raw:  # a worker setting, not the connector's
                body.setdefault("mm2.state.dir", self._file.raw["mm2.state.dir"])
            check = self._check(body)
            if check.error_count:
                raise BadRequestError(check.summary(), {k: e for k, e in check.errors.items() if e})

            def edit(c: Changes) -> None:
                c.connector_configs[full] = body
                if full in c.deleted_connectors:
                    c.deleted_connectors.remove(full)

            self._store.update(edit)
            created = herder.put_connector(plain, body)
            return created, self.info(full)

    def _check(self, config: Mapping[str, str]) -> ConfigCheck:
        """Connect's validation: of the config with its references resolved (a reference
        that cannot be resolved is the error of its key)."""
        resolved: dict[str, str] = {}
        problems: dict[str, list[str]] = {}
        for key, value in config.items():
            try:
                resolved[key] = self._providers.resolve(value)
            except ProviderProblem as exc:
                problems[key] = [str(exc)]
        if problems:
            return ConfigCheck(plugin_name(config), {k: problems.get(k, []) for k in config})
        return validate_connector_config(resolved, self._plugins)

    def _resolved(self, config: Mapping[str, str]) -> dict[str, str]:
        try:
            return self._providers.resolve_all(config)
        except ProviderProblem as exc:
            raise BadRequestError(str(exc)) from None

    def patch_config(self, name: str, patch: Mapping[str, str | None]) -> ConnectorInfo:
        herder, plain, full = self._locate(name)
        config = herder.config(plain)
        for key, value in patch.items():
            if value is None:
                config.pop(key, None)
            else:
                config[key] = value
        return self.put_config(full, config)[1]

    def delete(self, name: str) -> None:
        with self._lock:
            herder, plain, full = self._locate(name)

            def edit(c: Changes) -> None:
                c.connector_configs.pop(full, None)
                c.target_states.pop(full, None)
                if full not in c.deleted_connectors:
                    c.deleted_connectors.append(full)

            self._store.update(edit)
            herder.delete_connector(plain)

    def _set_target(self, name: str, state: TargetState) -> None:
        herder, plain, full = self._locate(name)
        action: Callable[[str], None] = {
            "PAUSED": herder.pause,
            "STARTED": herder.resume,
            "STOPPED": herder.stop_connector,
        }[state]

        def edit(c: Changes) -> None:
            if state == "STARTED":
                c.target_states.pop(full, None)
            else:
                c.target_states[full] = state

        self._store.update(edit)
        action(plain)

    def pause(self, name: str) -> None:
        self._set_target(name, "PAUSED")

    def resume(self, name: str) -> None:
        self._set_target(name, "STARTED")

    def stop_connector(self, name: str) -> None:
        self._set_target(name, "STOPPED")

    def restart(self, name: str, *, include_tasks: bool, only_failed: bool) -> ConnectorStatus:
        herder, plain, _ = self._locate(name)
        herder.restart(plain, include_tasks=include_tasks, only_failed=only_failed)
        return self.status(name)

    def restart_task(self, name: str, task: int) -> None:
        herder, plain, full = self._locate(name)
        try:
            herder.restart_task(plain, task)
        except NotFoundError:
            raise NotFoundError(f"Task {full}-{task} not found") from None

    # -- offsets (Connect: only changed while the connector is STOPPED) --
    def _offset_store(self, name: str, change: bool) -> tuple[OffsetStore | None, dict[str, str]]:
        herder, plain, full = self._locate(name)
        config = herder.started_config(plain)  # the offsets topic is a worker key
        store = self._offsets.get(plugin_name(config) or plain)
        if change and herder.status(plain).state != "STOPPED":
            raise BadRequestError(
                "Connectors must be in the STOPPED state before their offsets can be modified. "
                f"This can be done for the specified connector by issuing a 'PUT' request to "
                f"the '/connectors/{full}/stop' endpoint"
            )
        if change and store is None:
            raise BadRequestError(f"connector {full} keeps no offsets that could be modified")
        return store, config

    def offsets(self, name: str) -> list[ConnectorOffset]:
        store, config = self._offset_store(name, change=False)
        return [] if store is None else store.read(self._resolved(config))

    def alter_offsets(self, name: str, offsets: Sequence[ConnectorOffset]) -> None:
        if not offsets:
            raise BadRequestError("The offsets to modify must not be empty", {"offsets": ["empty"]})
        store, config = self._offset_store(name, change=True)
        assert store is not None
        store.alter(self._resolved(config), offsets)

    def reset_offsets(self, name: str) -> None:
        store, config = self._offset_store(name, change=True)
        assert store is not None
        store.reset(self._resolved(config))

    def validate(self, plugin: str, config: Mapping[str, str]) -> ConfigCheck:
        simple = plugin.rsplit(".", 1)[-1]
        if simple not in self._plugins:
            raise NotFoundError(f"no connector plugin {plugin!r}")
        body = dict(config)
        given = plugin_name(body)
        if given and given != simple:
            raise BadRequestError(
                "Included connector type does not match request type",
                {"connector.class": [f"must be {plugin}"]},
            )
        body.setdefault("connector.class", plugin)
        return self._check(body)

    # -- flows --
    def flows(self) -> list[FlowView]:
        return [self.flow(*split_flow(name)) for name in sorted(self.worker.herders)]

    def flow(self, source: str, target: str) -> FlowView:
        name = flow_name(source, target)
        herder = self.worker.herder(name)
        flow = self._flows[name]
        statuses = [
            dataclasses.replace(herder.status(p), name=connector_name(name, p))
            for p in herder.connector_names
        ]
        leader = self.runner(name)
        state = flow_state(
            flow,
            statuses,
            runs_here=self._leads(name),
            leader=leader.url if leader else None,
            monitor=self.monitors.get(name),
        )
        return flow_view(flow, herder, connector_name, state)

    def lag(self, source: str, target: str) -> LagReport | None:
        """The flow's lag as last read from Kafka (None: not read yet, or not monitored)."""
        name = flow_name(source, target)
        self.worker.herder(name)
        monitor = self.monitors.get(name)
        return None if monitor is None else monitor.report

    def _flow_connectors(self, source: str, target: str) -> list[str]:
        herder = self.worker.herder(flow_name(source, target))
        return [connector_name(herder.flow, p) for p in herder.connector_names]

    def pause_flow(self, source: str, target: str) -> None:
        for name in self._flow_connectors(source, target):
            self.pause(name)

    def resume_flow(self, source: str, target: str) -> None:
        for name in self._flow_connectors(source, target):
            self.resume(name)

    def stop_flow(self, source: str, target: str) -> None:
        for name in self._flow_connectors(source, target):
            self.stop_connector(name)

    def add_flow(
        self,
        source: str,
        target: str,
        clusters: Mapping[str, Mapping[str, str]],
        overrides: Mapping[str, str],
    ) -> FlowView:
        """Start a new flow, between known clusters or ones described in `clusters`."""
        with self._lock:
            name = flow_name(source, target)
            if name in self.worker.herders:
                raise ConflictError(f"replication flow {name} exists already")
            edit = new_flow_edit(
                source,
                target,
                clusters,
                overrides,
                known=self._resolve(self._store.changes).clusters,
                flows=list(self.worker.herders),
                in_file=name in self._file_flows,
            )
            candidate = self._store.changes
            edit(candidate)
            try:
                flow = self._resolve(candidate).flow(source, target)
            except ConfigError as exc:
                key = exc.key or "overrides"
                raise BadRequestError(exc.detail, {key: [exc.detail]}) from None
            except KeyError:
                raise BadRequestError(
                    f"{name} would neither replicate nor emit heartbeats",
                    {"overrides": ["enabled or emit.heartbeats.enabled must be true"]},
                ) from None
            self._store.update(edit)
            self._flows[name] = flow
            if self.coordinator is not None:
                self.coordinator.watch(flow)
            self.worker.add_flow(
                name,
                self._connector_configs(flow, candidate),
                self._targets(name, candidate),
                flow.worker_keys(),
            )
            if self.worker.started:
                self.monitors.watch(flow)
            return self.flow(source, target)

    def remove_flow(self, source: str, target: str) -> None:
        with self._lock:
            name = flow_name(source, target)
            self.worker.herder(name)
            edit = removed_flow_edit(name, in_file=name in self._file_flows)
            self._store.update(edit)
            self.worker.remove_flow(name)
            self.monitors.forget(name)
            self._flows.pop(name, None)


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
