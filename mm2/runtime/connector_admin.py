"""Connectors by name as operators manage them: configs, status, pause/resume/stop, restart,
validation. Every change is written to the ChangeStore before the call returns, so it
survives a restart (see changes.py for how stored changes and mm2.properties combine)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

from mm2.config.model import HIDDEN, is_password
from mm2.config.providers import ProviderProblem
from mm2.config.settings import DEFAULT_STATE_DIR
from mm2.errors import BadRequestError, ConflictError, NotFoundError
from mm2.runtime.changes import Changes
from mm2.runtime.flow_set import FlowSet
from mm2.runtime.naming import connector_name, split_flow
from mm2.runtime.status import ConnectorStatus, TargetState, TaskStatus
from mm2.runtime.validation import ConfigCheck, plugin_name, validate_connector_config

__all__ = ["ConnectorAdmin", "ConnectorInfo"]


@dataclasses.dataclass(frozen=True)
class ConnectorInfo:
    """Connect's ConnectorInfo: name, config (secrets as stored), task ids and type."""

    name: str
    flow: str
    config: dict[str, str]
    tasks: tuple[int, ...]
    type: str


class ConnectorAdmin:
    """Connect's /connectors resources over the herders of a FlowSet."""

    def __init__(self, flows: FlowSet) -> None:
        self._flows = flows

    def names(self) -> list[str]:
        return sorted(connector_name(f, p) for f, p in self._flows.pairs())

    def flow_of(self, name: str) -> str:
        return self._flows.locate(name)[0].flow

    def statuses(self) -> list[tuple[str, ConnectorStatus]]:
        """(flow, status) of every connector, by flow; one deleted meanwhile is left out."""
        out = []
        for flow, herder in list(self._flows.worker.herders.items()):
            for plain in herder.connector_names:
                try:
                    status = herder.status(plain)
                except LookupError:
                    continue  # deleted meanwhile
                out.append((flow, dataclasses.replace(status, name=connector_name(flow, plain))))
        return out

    def info(self, name: str) -> ConnectorInfo:
        herder, plain, full = self._flows.locate(name)
        config = {**herder.config(plain), "name": full}
        tasks = tuple(range(len(herder.task_configs(plain))))
        return ConnectorInfo(full, herder.flow, config, tasks, herder.plugin(plain).connector_type)

    def status(self, name: str) -> ConnectorStatus:
        herder, plain, full = self._flows.locate(name)
        return dataclasses.replace(herder.status(plain), name=full)

    def task_configs(self, name: str) -> list[dict[str, str]]:
        herder, plain, _ = self._flows.locate(name)
        return herder.task_configs(plain)

    def task_status(self, name: str, task: int) -> TaskStatus:
        for status in self.status(name).tasks:
            if status.id == task:
                return status
        raise NotFoundError(f"Task {name}-{task} not found")

    def _where_new(self, name: str) -> tuple[str, str]:
        """(flow, plain) for a connector about to be created under `name`."""
        plugins = self._flows.plugins
        found = [
            (flow, name[len(connector_name(flow, "")) :])
            for flow in list(self._flows.worker.herders)
            if name.startswith(connector_name(flow, ""))
            and name[len(connector_name(flow, "")) :] in plugins
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
        flows = self._flows
        with flows.lock:
            try:
                herder, plain, full = flows.locate(name)
                current = herder.config(plain)
            except NotFoundError:
                flow, plain = self._where_new(name)
                herder, full, current = flows.worker.herder(flow), connector_name(flow, plain), {}
            given = config.get("name")
            if given is not None and given not in (full, plain, name):
                raise BadRequestError(
                    f"Connector name configuration ({given}) doesn't match connector name "
                    f"in the URL ({name})",
                    {"name": [f"must be {full}"]},
                )
            body = {
                k: current.get(k, v) if v == HIDDEN and is_password(k) else v
                for k, v in config.items()
            }
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
            # A process setting the connector's local state follows (as the file's connectors do).
            if (state_dir := flows.file.settings.mm2_state_dir) != DEFAULT_STATE_DIR:
                body.setdefault("mm2.state.dir", state_dir)
            check = self._check(body)
            if check.error_count:
                raise BadRequestError(check.summary(), {k: e for k, e in check.errors.items() if e})

            def edit(c: Changes) -> None:
                c.connector_configs[full] = body
                if full in c.deleted_connectors:
                    c.deleted_connectors.remove(full)

            flows.store.update(edit)
            created = herder.put_connector(plain, body)
            return created, self.info(full)

    def _check(self, config: Mapping[str, str]) -> ConfigCheck:
        """Connect's validation: of the config with its references resolved (a reference
        that cannot be resolved is the error of its key)."""
        resolved: dict[str, str] = {}
        problems: dict[str, list[str]] = {}
        for key, value in config.items():
            try:
                resolved[key] = self._flows.providers.resolve(value)
            except ProviderProblem as exc:
                problems[key] = [str(exc)]
        if problems:
            return ConfigCheck(plugin_name(config), {k: problems.get(k, []) for k in config})
        return validate_connector_config(resolved, self._flows.plugins)

    def patch_config(self, name: str, patch: Mapping[str, str | None]) -> ConnectorInfo:
        herder, plain, full = self._flows.locate(name)
        config = herder.config(plain)
        for key, value in patch.items():
            if value is None:
                config.pop(key, None)
            else:
                config[key] = value
        return self.put_config(full, config)[1]

    def delete(self, name: str) -> None:
        with self._flows.lock:
            herder, plain, full = self._flows.locate(name)

            def edit(c: Changes) -> None:
                c.connector_configs.pop(full, None)
                c.target_states.pop(full, None)
                if full not in c.deleted_connectors:
                    c.deleted_connectors.append(full)

            self._flows.store.update(edit)
            herder.delete_connector(plain)

    def _set_target(self, name: str, state: TargetState) -> None:
        herder, plain, full = self._flows.locate(name)
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

        self._flows.store.update(edit)
        action(plain)

    def pause(self, name: str) -> None:
        self._set_target(name, "PAUSED")

    def resume(self, name: str) -> None:
        self._set_target(name, "STARTED")

    def stop(self, name: str) -> None:
        self._set_target(name, "STOPPED")

    def restart(self, name: str, *, include_tasks: bool, only_failed: bool) -> ConnectorStatus:
        herder, plain, _ = self._flows.locate(name)
        herder.restart(plain, include_tasks=include_tasks, only_failed=only_failed)
        return self.status(name)

    def restart_task(self, name: str, task: int) -> None:
        herder, plain, full = self._flows.locate(name)
        try:
            herder.restart_task(plain, task)
        except NotFoundError:
            raise NotFoundError(f"Task {full}-{task} not found") from None

    def validate(self, plugin: str, config: Mapping[str, str]) -> ConfigCheck:
        simple = plugin.rsplit(".", 1)[-1]
        if simple not in self._flows.plugins:
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
