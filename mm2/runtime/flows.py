"""Flows as resources: their summary view, and the stored changes that add or remove one."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from mm2.config.keys import WORKER_PREFIXES
from mm2.config.model import Flow
from mm2.config.names import CLIENT_CONFIG_NAMES, CONNECTOR_CONFIG_NAMES
from mm2.errors import BadRequestError, ConflictError
from mm2.runtime.changes import Changes
from mm2.runtime.herder import Herder
from mm2.runtime.metrics import MetricsRegistry
from mm2.runtime.naming import connector_name, flow_name
from mm2.runtime.snapshots import FlowEvent

__all__ = [
    "FlowLag",
    "FlowView",
    "flow_view",
    "new_flow_edit",
    "removed_flow_edit",
    "stored_properties",
]

# Aliases become topic-name prefixes and URL path segments: keep them to Kafka's topic chars.
_ALIAS = re.compile(r"[A-Za-z0-9_-]+")
# A new cluster's keys are stored as `<alias>.<key>`. Where that spells a top-level key of the
# file (`config` + `providers` = config.providers, `mm2` + `state.dir`, `replication` +
# `policy.separator`) it would change settings of every flow, so it is refused.
_TOP_LEVEL_NAMES = CONNECTOR_CONFIG_NAMES | CLIENT_CONFIG_NAMES
_TOP_LEVEL_PREFIXES = (
    "config.providers",
    "replication.policy",
    "mm2.",
    "spark.",
    "listeners",
    "rest.",
    "java.",
    "ssl.",
    "sasl.",
    "security.",
    "access.control.",
    "response.http.",
    "dedicated.mode.",
    *WORKER_PREFIXES,
    "clusters",
    "exactly.once.",
)


def _top_level(key: str) -> bool:
    return key in _TOP_LEVEL_NAMES or key.startswith(_TOP_LEVEL_PREFIXES)


@dataclass(frozen=True)
class FlowLag:
    """How far the target is behind, summed over the flow's source partitions."""

    partitions: int
    records: int
    max_seconds: float
    records_copied: int


@dataclass(frozen=True)
class FlowView:
    source: str
    target: str
    enabled: bool
    state: str
    connectors: tuple[str, ...]
    lag: FlowLag
    cause: str | None = None
    # The REST URL of the process that runs this flow when it is another one (this process is
    # its standby): that process reports the flow's state and lag, this one does not.
    runs_on: str | None = None
    events: tuple[FlowEvent, ...] = ()  # the newest, oldest first (mm2.runtime.metrics)


def _flow_state(states: Sequence[str]) -> str:
    if not states:
        return "UNASSIGNED"
    for state in ("FAILED", "RUNNING", "PAUSED", "STOPPED"):
        if state in states:
            return state
    return states[0]


def flow_view(
    flow: Flow,
    herder: Herder,
    name: Callable[[str, str], str],
    state: tuple[str, str | None] | None = None,
    *,
    metrics: MetricsRegistry,
) -> FlowView:
    """`state` is (state, cause) as mm2.runtime.flow_state derives it; without it, the
    connectors' worst: FAILED, else RUNNING, PAUSED, STOPPED. The lag is summed from the
    partitions' figures in `metrics`."""
    names = herder.connector_names
    states = [herder.status(p).state for p in names]
    parts = [s for s in metrics.snapshot() if (s.source, s.target) == (flow.source, flow.target)]
    lag = FlowLag(
        len(parts),
        sum(p.lag_records for p in parts),
        max((p.lag_seconds for p in parts), default=0.0),
        sum(p.record_count for p in parts),
    )
    state_now, cause = state if state is not None else (_flow_state(states), None)
    return FlowView(
        flow.source,
        flow.target,
        flow.enabled,
        state_now,
        tuple(name(herder.flow, p) for p in names),
        lag,
        cause,
        events=metrics.events(flow.source, flow.target),
    )


def new_flow_edit(
    source: str,
    target: str,
    clusters: Mapping[str, Mapping[str, str]],
    overrides: Mapping[str, str],
    *,
    known: Sequence[str],
    flows: Sequence[str],
    in_file: bool,
) -> Callable[[Changes], None]:
    """The stored change that adds flow source->target; refuses what cannot be added."""
    name = flow_name(source, target)
    if source == target:
        raise BadRequestError("a flow needs two different clusters", {"target": ["== source"]})
    for alias in (source, target, *clusters):
        if not _ALIAS.fullmatch(alias):
            raise BadRequestError(
                f"cluster alias {alias!r}: use letters, digits, '_' and '-' only",
                {"clusters": [f"bad alias {alias!r}"]},
            )
    for alias in clusters:
        if alias in known:
            raise ConflictError(
                f"cluster {alias!r} is known already; describe only new clusters in 'clusters'"
            )
    for alias in (source, target):
        if alias not in known and alias not in clusters:
            raise BadRequestError(
                f"unknown cluster {alias!r}: describe it in 'clusters' with bootstrap.servers",
                {"clusters": [f"{alias} is missing"]},
            )
        if alias in clusters and not clusters[alias].get("bootstrap.servers"):
            raise BadRequestError(
                f"cluster {alias!r} needs bootstrap.servers",
                {f"clusters.{alias}.bootstrap.servers": ["missing"]},
            )
    for other in flows:  # two flows must never share a connector name
        if connector_name(other, "X") == connector_name(name, "X"):
            raise ConflictError(f"flow {name} would share connector names with flow {other}")
    props = {f"{a}.{k}": v for a, c in clusters.items() for k, v in c.items()}
    if spelt := sorted(k for k in props if _top_level(k)):
        raise BadRequestError(
            f"{', '.join(spelt)}: a cluster's key spells a top-level key of mm2.properties; "
            "choose another alias",
            {"clusters": [f"{k} is a top-level key" for k in spelt]},
        )
    props.update({f"{name}.{k}": v for k, v in overrides.items()})
    props.setdefault(f"{name}.enabled", "true")

    def edit(c: Changes) -> None:
        c.clusters.extend(a for a in clusters if a not in c.clusters)
        c.properties.update(props)
        c.removed_flows = [f for f in c.removed_flows if f != name]
        if not in_file and name not in c.added_flows:
            c.added_flows.append(name)

    return edit


def stored_properties(changes: Changes) -> dict[str, str]:
    """The stored mm2.properties keys that REST may set: those of the clusters it added and of
    flows (`A->B.*`). Anything else in a change file or record (a top-level key such as
    `config.providers`) is ignored: providers and worker settings come from mm2.properties."""
    prefixes = tuple(f"{a}." for a in changes.clusters)
    return {
        k: v
        for k, v in changes.properties.items()
        if "->" in k.partition(".")[0] or (k.startswith(prefixes) and not _top_level(k))
    }


def removed_flow_edit(name: str, *, in_file: bool) -> Callable[[Changes], None]:
    """The stored change that removes a flow and forgets its connector changes."""
    prefix = connector_name(name, "")

    def edit(c: Changes) -> None:
        if in_file and name not in c.removed_flows:
            c.removed_flows.append(name)
        c.added_flows = [f for f in c.added_flows if f != name]
        c.properties = {k: v for k, v in c.properties.items() if not k.startswith(f"{name}.")}
        c.connector_configs = {
            k: v for k, v in c.connector_configs.items() if not k.startswith(prefix)
        }
        c.target_states = {k: v for k, v in c.target_states.items() if not k.startswith(prefix)}
        c.deleted_connectors = [k for k in c.deleted_connectors if not k.startswith(prefix)]

    return edit
