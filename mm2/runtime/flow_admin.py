"""Flows as resources: their views and lag, adding and removing one, and pausing, resuming or
stopping all of a flow's connectors at once."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from mm2.client.failover import (
    Applied,
    apply_failover,
    plan_failover,
    target_group_admin,
    translate_all_groups,
)
from mm2.client.lag import LagReport
from mm2.client.plan import FailoverPlan
from mm2.client.recovery import RecoveryPoint, recovery_point
from mm2.config.model import Flow
from mm2.errors import BadRequestError, ConfigError, ConflictError
from mm2.runtime.connector_admin import ConnectorAdmin
from mm2.runtime.flow_set import FlowSet
from mm2.runtime.flow_state import flow_state
from mm2.runtime.flows import FlowView, flow_view, new_flow_edit, removed_flow_edit
from mm2.runtime.leadership import Leadership
from mm2.runtime.naming import connector_name, flow_name, split_flow

__all__ = ["FlowAdmin"]


class FlowAdmin:
    """/flows over a FlowSet; a flow's connectors change through the ConnectorAdmin."""

    def __init__(self, flows: FlowSet, leadership: Leadership, connectors: ConnectorAdmin) -> None:
        self._flows = flows
        self._leadership = leadership
        self._connectors = connectors

    def views(self) -> list[FlowView]:
        return [self.view(*split_flow(name)) for name in sorted(self._flows.worker.herders)]

    def view(self, source: str, target: str) -> FlowView:
        name = flow_name(source, target)
        herder = self._flows.worker.herder(name)
        flow = self._flows.flows[name]
        statuses = [
            dataclasses.replace(herder.status(p), name=connector_name(name, p))
            for p in herder.connector_names
        ]
        leader = self._leadership.runner(name)
        runs_here = self._leadership.leads(name)
        state = flow_state(
            flow,
            statuses,
            runs_here=runs_here,
            leader=leader.url if leader else None,
            monitor=self._flows.monitors.get(name),
        )
        view = flow_view(flow, herder, connector_name, state, metrics=self._flows.metrics)
        if not runs_here and leader is not None and not leader.this_worker:
            view = dataclasses.replace(view, runs_on=leader.url)
        return view

    def state_of(self, source: str, target: str) -> str:
        """The flow's state as /flows shows it (NotFoundError for an unknown flow)."""
        return self.view(source, target).state

    def lag(self, source: str, target: str) -> LagReport | None:
        """The flow's lag as last read from Kafka (None: not read yet, or not monitored)."""
        name = flow_name(source, target)
        self._flows.worker.herder(name)
        monitor = self._flows.monitors.get(name)
        return None if monitor is None else monitor.report

    def pair(self, source: str, target: str) -> tuple[Flow, Flow | None]:
        """The flow and its reverse (None when the file has none); NotFoundError for a flow
        that does not exist."""
        name = flow_name(source, target)
        self._flows.worker.herder(name)
        return self._flows.flows[name], self._flows.flows.get(flow_name(target, source))

    def group_offsets(self, source: str, target: str, timeout: float = 15.0) -> list[FailoverPlan]:
        """Every group the flow mirrors, translated to its target in one pass (KIP-1239)."""
        flow, reverse = self.pair(source, target)
        return translate_all_groups(flow, reverse_flow=reverse, timeout=timeout)

    def failover_group(
        self, source: str, target: str, group: str, *, force: bool = False, timeout: float = 15.0
    ) -> tuple[FailoverPlan, Applied]:
        """`mm2 failover --group`: the group's live commits translated and committed on the
        target; FailoverError, a ConflictError (nothing committed), while the group has no
        commits, has members there or nothing translates."""
        flow, reverse = self.pair(source, target)
        plan = plan_failover(flow, group, reverse_flow=reverse, timeout=timeout)
        return plan, apply_failover(plan, target_group_admin(flow, timeout), force=force)

    def recovery_point(self, source: str, target: str, timeout: float = 15.0) -> RecoveryPoint:
        """What the flow had not copied of the source's ends, or since when that is unknown."""
        flow, _ = self.pair(source, target)
        return recovery_point(flow, timeout=timeout)

    def _connector_names(self, source: str, target: str) -> list[str]:
        herder = self._flows.worker.herder(flow_name(source, target))
        return [connector_name(herder.flow, p) for p in herder.connector_names]

    def pause(self, source: str, target: str) -> None:
        for name in self._connector_names(source, target):
            self._connectors.pause(name)

    def resume(self, source: str, target: str) -> None:
        for name in self._connector_names(source, target):
            self._connectors.resume(name)

    def stop(self, source: str, target: str) -> None:
        for name in self._connector_names(source, target):
            self._connectors.stop(name)

    def add(
        self,
        source: str,
        target: str,
        clusters: Mapping[str, Mapping[str, str]],
        overrides: Mapping[str, str],
    ) -> FlowView:
        """Start a new flow, between known clusters or ones described in `clusters`."""
        flows = self._flows
        with flows.lock:
            name = flow_name(source, target)
            if name in flows.worker.herders:
                raise ConflictError(f"replication flow {name} exists already")
            edit = new_flow_edit(
                source,
                target,
                clusters,
                overrides,
                known=flows.resolve(flows.store.changes).clusters,
                flows=list(flows.worker.herders),
                in_file=flows.in_file(name),
            )
            candidate = flows.store.changes
            edit(candidate)
            try:
                flow = flows.resolve(candidate).flow(source, target)
            except ConfigError as exc:
                key = exc.key or "overrides"
                raise BadRequestError(exc.detail, {key: [exc.detail]}) from None
            except KeyError:
                raise BadRequestError(
                    f"{name} would neither replicate nor emit heartbeats",
                    {"overrides": ["enabled or emit.heartbeats.enabled must be true"]},
                ) from None
            flows.store.update(edit)
            flows.add(flow, candidate)
            return self.view(source, target)

    def remove(self, source: str, target: str) -> None:
        flows = self._flows
        with flows.lock:
            name = flow_name(source, target)
            flows.worker.herder(name)
            flows.store.update(removed_flow_edit(name, in_file=flows.in_file(name)))
            flows.remove(name)
