"""One herder per flow: runs its connectors and their tasks, and carries out state changes."""

from __future__ import annotations

import logging
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from mm2.config.providers import has_reference
from mm2.config.settings import tasks_max
from mm2.connect.spi import Connector, LeaderEpoch
from mm2.errors import ConflictError, NotFoundError
from mm2.runtime.liveness import Liveness
from mm2.runtime.metrics import MetricsRegistry
from mm2.runtime.status import ConnectorStatus, State, TargetState
from mm2.runtime.task_runner import STOP_TIMEOUT_S, Backoff, TaskRunner

__all__ = ["ConnectorNotFoundError", "Herder", "Plugins", "Transform"]

log = logging.getLogger(__name__)

Plugins = Mapping[str, type[Connector]]
# Connect's WorkerConfigTransformer: a connector config with its `${provider:...}` resolved.
Transform = Callable[[Mapping[str, str]], dict[str, str]]


def _untransformed(config: Mapping[str, str]) -> dict[str, str]:
    return dict(config)


class ConnectorNotFoundError(NotFoundError):
    """No connector of that name in this herder."""


@dataclass
class _Running:
    """A connector instance, its config as given (references unresolved), its target state
    and its task runners (which get resolved configs)."""

    name: str
    plugin: type[Connector]
    config: dict[str, str]
    target: TargetState = "STARTED"
    instance: Connector | None = None
    trace: str | None = None
    tasks: list[TaskRunner] = field(default_factory=list)
    # Runners asked to stop that had not yet: their successors wait for them.
    stopping: list[TaskRunner] = field(default_factory=list)


class Herder:
    """The connectors of one flow `source->target`, each with Connect's lifecycle."""

    def __init__(
        self,
        flow: str,
        connectors: Mapping[str, Mapping[str, str]],
        plugins: Plugins,
        *,
        worker_id: str,
        backoff: Backoff | None = None,
        targets: Mapping[str, TargetState] | None = None,
        transform: Transform | None = None,
        worker: Mapping[str, str] | None = None,
        metrics: MetricsRegistry | None = None,
        liveness: Liveness | None = None,
        leader_epoch: Callable[[], LeaderEpoch | None] = lambda: None,
    ) -> None:
        """`targets` gives connectors a first target state other than STARTED (stored changes);
        `metrics` and `liveness` are handed to every task (see TaskRunner).

        Configs are kept as given and shown so; `transform` resolves them for the connector
        and its tasks only when they start, as Connect's worker does. `worker` holds the flow's
        worker keys that mm2's connectors act on (Flow.worker_keys: the offsets topic, exactly
        once): each connector starts with its config over them, but they are no part of its
        config, as in Apache, nor of its tasks' configs as shown."""
        self.flow = flow
        self.worker = dict(worker or {})
        self._transform = transform or _untransformed
        self._plugins = plugins
        self._worker_id = worker_id
        self._backoff = backoff
        self._metrics = metrics or MetricsRegistry()
        self._liveness = liveness or Liveness()
        self._leader_epoch = leader_epoch
        self._lock = threading.RLock()
        self._connectors: dict[str, _Running] = {}
        self._active = False  # runs tasks only between start() and stop() (the leader)
        for name, config in connectors.items():
            run = _Running(name, self._plugin(config, name), dict(config))
            run.target = (targets or {}).get(name, "STARTED")
            self._connectors[name] = run

    def _plugin(self, config: Mapping[str, str], name: str) -> type[Connector]:
        cls_name = config.get("connector.class", name)
        plugin = self._plugins.get(cls_name) or self._plugins.get(cls_name.rsplit(".", 1)[-1])
        if plugin is None:
            known = ", ".join(sorted(self._plugins))
            raise ConnectorNotFoundError(f"no connector plugin {cls_name!r}; known: {known}")
        return plugin

    @property
    def connector_names(self) -> list[str]:
        return sorted(self._connectors)

    def _get(self, name: str) -> _Running:
        try:
            return self._connectors[name]
        except KeyError:
            raise ConnectorNotFoundError(f"connector {name!r} not found in {self.flow}") from None

    def config(self, name: str) -> dict[str, str]:
        with self._lock:
            return dict(self._get(name).config)

    def started_config(self, name: str) -> dict[str, str]:
        """The config `name` starts with (untransformed): its own over the worker keys."""
        with self._lock:
            return {**self.worker, **self._get(name).config}

    def task_configs(self, name: str) -> list[dict[str, str]]:
        """The tasks' configs, with a key whose connector value holds a `${...}` reference
        shown as that reference (Connect's reverse transformation)."""
        with self._lock:
            run = self._get(name)
            raw = {k: v for k, v in run.config.items() if has_reference(v)}
            worker = set(self.worker) - set(run.config)
            return [
                {k: raw.get(k, v) for k, v in t.config.items() if k not in worker}
                for t in run.tasks
            ]

    def target_state(self, name: str) -> TargetState:
        with self._lock:
            return self._get(name).target

    def plugin(self, name: str) -> type[Connector]:
        with self._lock:
            return self._get(name).plugin

    def put_connector(self, name: str, config: Mapping[str, str], *, start: bool = True) -> bool:
        """Create or reconfigure `name` (its target state is kept); True when it is new."""
        plugin = self._plugin(config, name)
        with self._lock:
            run = self._connectors.get(name)
            created = run is None
            if run is None:
                run = self._connectors[name] = _Running(name, plugin, dict(config))
            else:
                self._halt(run)
                run.plugin, run.config = plugin, dict(config)
            if start:
                self._start(run)
        log.info("%s|%s: config %s", self.flow, name, "created" if created else "updated")
        return created

    def delete_connector(self, name: str) -> None:
        with self._lock:
            self._halt(self._get(name))
            del self._connectors[name]
        log.info("%s|%s: deleted", self.flow, name)

    # -- lifecycle --
    @property
    def active(self) -> bool:
        """True while this process runs the flow (it leads the target cluster)."""
        return self._active

    def start(self) -> None:
        with self._lock:
            self._active = True
            for run in self._connectors.values():
                self._start(run)
        log.info("%s: herder started with %s", self.flow, ", ".join(self.connector_names))

    def signal_stop(self) -> None:
        """Ask every task to stop without waiting, so that several herders stop side by side."""
        with self._lock:
            for run in self._connectors.values():
                for runner in run.tasks:
                    runner.signal_stop()

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> None:
        """Stop every task (all at once, waiting at most `timeout` in all) and connector."""
        deadline = time.monotonic() + timeout
        with self._lock:
            self._active = False
            self.signal_stop()
            for run in self._connectors.values():
                self._halt(run, deadline)
        log.info("%s: herder stopped", self.flow)

    def _start(self, run: _Running) -> None:
        if run.target == "STOPPED" or not self._active:
            return
        run.trace = None
        try:
            config = self._transform({**self.worker, **run.config})
            instance = run.plugin()
            instance.start(config)
            run.instance = instance
            configs = instance.task_configs(tasks_max(config))
        except Exception as exc:  # noqa: BLE001 - reported as the connector's FAILED state
            run.trace = "".join(traceback.format_exception(exc))
            log.error("%s|%s failed to start: %s", self.flow, run.name, exc)
            return
        for task_id, task_config in enumerate(configs):
            runner = self._runner(run, task_id, task_config)
            run.tasks.append(runner)
            runner.start()

    def _runner(self, run: _Running, task_id: int, config: Mapping[str, str]) -> TaskRunner:
        run.stopping = [r for r in run.stopping if r.alive]
        return TaskRunner(
            run.plugin.task_class(),
            config,
            flow=self.flow,
            connector=run.name,
            task_id=task_id,
            worker_id=self._worker_id,
            paused=run.target == "PAUSED",
            backoff=self._backoff,
            after=[r for r in run.stopping if r.task_id == task_id],
            metrics=self._metrics,
            liveness=self._liveness,
            leader_epoch=self._leader_epoch,
        )

    def _halt(self, run: _Running, deadline: float | None = None) -> None:
        """Stop the connector's tasks side by side, then the connector."""
        if deadline is None:
            deadline = time.monotonic() + STOP_TIMEOUT_S
        for runner in run.tasks:
            runner.signal_stop()
        for runner in run.tasks:
            runner.join(deadline - time.monotonic())
        run.stopping = [r for r in [*run.stopping, *run.tasks] if r.alive]
        run.tasks.clear()
        if run.instance is not None:
            try:
                run.instance.stop()
            except Exception:
                log.exception("%s|%s: error while stopping", self.flow, run.name)
            run.instance = None

    def pause(self, name: str) -> None:
        with self._lock:
            run = self._get(name)
            if run.target == "STOPPED":
                run.target = "PAUSED"
                self._start(run)
            run.target = "PAUSED"
            for runner in run.tasks:
                runner.pause()

    def resume(self, name: str) -> None:
        with self._lock:
            run = self._get(name)
            previous, run.target = run.target, "STARTED"
            if previous == "STOPPED":
                self._start(run)
            for runner in run.tasks:
                runner.resume()

    def stop_connector(self, name: str) -> None:
        with self._lock:
            run = self._get(name)
            run.target = "STOPPED"
            self._halt(run)

    def restart(self, name: str, *, include_tasks: bool = False, only_failed: bool = False) -> None:
        """Connect's restart: the connector, and (optionally only failed) tasks with it."""
        with self._lock:
            run = self._get(name)
            failed = run.trace is not None or any(t.status().state == "FAILED" for t in run.tasks)
            if only_failed and not failed:
                return
            log.info("%s|%s: restarting%s", self.flow, name, " with its tasks" * include_tasks)
            self._halt(run)
            self._start(run)

    def restart_task(self, name: str, task_id: int) -> None:
        with self._lock:
            run = self._get(name)
            if not self._active:
                raise ConflictError(f"{self.flow} runs on the leader of its target cluster")
            # A copy task is restarted with the task that runs it (its planner): its epoch
            # is the planner's to start, and a new one deals the partitions again.
            index = next(
                (i for i, t in enumerate(run.tasks) if any(s.id == task_id for s in t.statuses())),
                None,
            )
            if index is None:
                raise ConnectorNotFoundError(f"task {task_id} of {name!r} not found")
            log.info("%s|%s: restarting task %d", self.flow, name, task_id)
            old = run.tasks[index]
            old.stop()
            run.stopping.append(old)
            fresh = self._runner(run, index, old.config)
            run.tasks[index] = fresh
            fresh.start()

    def wait_stopped(self, name: str, timeout: float) -> bool:
        """Whether every task of `name` has ended, waiting up to `timeout` s for those still
        stopping: only then will nothing more be written for it (a stop's last positions)."""
        with self._lock:
            run = self._get(name)
            runners = [r for r in [*run.stopping, *run.tasks] if r.alive]
        deadline = time.monotonic() + timeout
        for runner in runners:
            runner.join(max(0.0, deadline - time.monotonic()))
        return not any(r.alive for r in runners)

    # -- views --
    def status(self, name: str) -> ConnectorStatus:
        with self._lock:
            run = self._get(name)
            state: State
            if run.trace is not None:
                state = "FAILED"
            elif run.target == "STOPPED":
                state = "STOPPED"
            elif run.target == "PAUSED":
                state = "PAUSED"
            else:
                state = "RUNNING" if run.instance is not None else "UNASSIGNED"
            return ConnectorStatus(
                name,
                state,
                self._worker_id,
                tuple(s for t in run.tasks for s in t.statuses()),
                run.trace,
                run.plugin.connector_type,
            )
