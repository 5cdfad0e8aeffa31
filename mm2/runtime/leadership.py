"""Which process runs which flow: the leader of a flow's target cluster runs it, the others
stand by (see mm2.runtime.standby); without a coordinator this process runs every flow."""

from __future__ import annotations

import logging

from mm2.connect.spi import LeaderEpoch
from mm2.errors import ConflictError, MM2Error
from mm2.runtime.changes import Changes
from mm2.runtime.flow_set import FlowSet
from mm2.runtime.standby import Coordinator, Leader

__all__ = ["Leadership"]

log = logging.getLogger(__name__)


class Leadership:
    """Answers who leads, and starts or stops the flows of a cluster on an election."""

    def __init__(self, coordinator: Coordinator | None, flows: FlowSet) -> None:
        self.coordinator = coordinator
        self._flows = flows

    def attach(self) -> None:
        """Keep REST changes in Kafka, follow changes and elections, watch the flows."""
        coordinator, flows = self.coordinator, self._flows
        if coordinator is None:
            return
        flows.store.publish = coordinator.publish
        coordinator.on_changes = flows.apply_changes
        coordinator.on_lead = self.on_lead
        for flow in flows.flows.values():
            coordinator.watch(flow)
        latest = coordinator.changes()
        if latest is not None and latest != flows.store.changes:
            flows.apply_changes(latest)  # published while this worker was being built

    def leads(self, flow: str) -> bool:
        """True when this process runs `flow` (it leads the flow's target cluster)."""
        if self.coordinator is None:
            return True
        found = self._flows.flows.get(flow)
        return found is not None and self.coordinator.leads(found.target)

    def epoch(self, flow: str) -> LeaderEpoch | None:
        """The leadership `flow` runs under (mm2.connect.spi.LeaderEpoch); None without a
        coordinator. The epoch is "" while this process does not lead the flow's target."""
        coordinator, found = self.coordinator, self._flows.flows.get(flow)
        if coordinator is None or found is None:
            return None
        alias = found.target
        return LeaderEpoch(coordinator.config_topic(alias), coordinator.leader_epoch(alias) or "")

    def on_lead(self, cluster: str, leading: bool) -> None:
        """This process was elected leader of `cluster` (or deposed): start (stop) its flows."""
        coordinator, flows = self.coordinator, self._flows
        with flows.lock:
            names = [name for name, f in flows.flows.items() if f.target == cluster]
            local = flows.store.changes
            if (
                leading
                and coordinator is not None
                and cluster == coordinator.home
                and not coordinator.has_stored_changes
                and local != Changes()
            ):
                # An upgrade: changes made before they were kept in Kafka move there.
                log.info("REST changes from %s now kept in Kafka", flows.store.path)
                try:
                    coordinator.publish(local)
                except MM2Error as exc:
                    log.error("REST changes not written to %s: %s", cluster, exc)
        flows.worker.lead(names, leading)

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
        coordinator, found = self.coordinator, self._flows.flows.get(flow)
        if coordinator is None or found is None or coordinator.leads(found.target):
            return None
        return coordinator.leader(found.target)

    def leaders(self) -> dict[str, Leader | None]:
        return {} if self.coordinator is None else self.coordinator.leaders()

    def stop(self) -> None:
        if self.coordinator is not None:
            self.coordinator.stop()  # leaves the groups: a standby is elected at once
