"""Request and response bodies: Kafka Connect's entity shapes, plus flows; secrets masked and
values resolved by config providers shown as their references.

Longer than most modules: every body of the REST API is declared here, and the OpenAPI document
(docs/rest-reference.md) is generated from them; one place keeps the shapes Connect users know
side by side. Each model is a few lines with no logic beyond converting a runtime value."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictInt

from mm2.client.plan import FailoverPlan, commits_for
from mm2.config.model import HIDDEN, is_password
from mm2.config.providers import redact
from mm2.records import OffsetAndMetadata
from mm2.runtime.connector_admin import ConnectorInfo
from mm2.runtime.flows import FlowView
from mm2.runtime.status import ConnectorStatus, State, TaskStatus
from mm2.runtime.switchovers import SwitchoverJob

__all__ = [
    "ConfigInfos",
    "ConfigMap",
    "ConnectorInfoBody",
    "ConnectorOffsetsBody",
    "ConnectorStateBody",
    "CreateConnectorBody",
    "ErrorBody",
    "FlowBody",
    "FlowCreateBody",
    "FlowHealthBody",
    "FlowHistoryBody",
    "GroupPartitionBody",
    "GroupPlanBody",
    "GroupsOffsetsBody",
    "HealthBody",
    "HistoryPointBody",
    "LeaderBody",
    "MessageBody",
    "PartitionBody",
    "PluginBody",
    "ServerInfoBody",
    "TaskInfoBody",
    "TaskStateBody",
    "error_responses",
    "failover_readiness",
    "mask",
]


def _to_str(value: object) -> object:
    """Connect's maps are string to string; JSON numbers and booleans are taken as their text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return value


ConfigValue = Annotated[str, BeforeValidator(_to_str)]
ConfigMap = dict[str, ConfigValue]
PatchMap = dict[str, ConfigValue | None]


def mask(config: Mapping[str, str]) -> dict[str, str]:
    """Passwords and JAAS configs shown as [hidden], in every response; a value a provider
    resolved (a task's config may hold one) as its reference."""
    return {k: HIDDEN if is_password(k) else redact(v) for k, v in config.items()}


def _trace(trace: str | None) -> str | None:
    return None if trace is None else redact(trace)


# Connect's offsets and partitions are Java numbers: a long at most.
JavaLong = Annotated[StrictInt, Field(ge=-(2**63), le=2**63 - 1)]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ErrorBody(BaseModel):
    error_code: int
    message: str
    errors: dict[str, list[str]] | None = Field(
        default=None, description="what is wrong, per field or config key"
    )


def error_responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """The OpenAPI `responses` of routes that answer these statuses with an ErrorBody."""
    return {code: {"model": ErrorBody} for code in codes}


class MessageBody(BaseModel):
    message: str


class ServerInfoBody(BaseModel):
    version: str
    commit: str
    kafka_cluster_id: str | None


class LeaderBody(BaseModel):
    """The process that leads a target cluster: its REST URL and worker id."""

    url: str
    worker_id: str
    this_worker: bool


class HealthBody(BaseModel):
    status: str
    message: str


class TaskId(BaseModel):
    connector: str
    task: int


class ConnectorInfoBody(BaseModel):
    name: str
    config: dict[str, str]
    tasks: list[TaskId]
    type: Literal["source", "sink"]

    @classmethod
    def of(cls, info: ConnectorInfo) -> ConnectorInfoBody:
        tasks = [TaskId(connector=info.name, task=t) for t in info.tasks]
        kind: Literal["source", "sink"] = "sink" if info.type == "sink" else "source"
        return cls(name=info.name, config=mask(info.config), tasks=tasks, type=kind)


class StateBody(BaseModel):
    state: State
    worker_id: str
    trace: str | None = None


class TaskStateBody(StateBody):
    id: int
    partitions: list[str] | None = Field(
        default=None,
        description="a copy task's source partitions (topic-partition); absent for other tasks",
    )

    @classmethod
    def of(cls, t: TaskStatus) -> TaskStateBody:
        partitions = None if t.partitions is None else list(t.partitions)
        return cls(
            id=t.id,
            state=t.state,
            worker_id=t.worker_id,
            trace=_trace(t.trace),
            partitions=partitions,
        )


class ConnectorStateBody(BaseModel):
    name: str
    connector: StateBody
    tasks: list[TaskStateBody]
    type: Literal["source", "sink"]

    @classmethod
    def of(cls, s: ConnectorStatus) -> ConnectorStateBody:
        return cls(
            name=s.name,
            connector=StateBody(state=s.state, worker_id=s.worker_id, trace=_trace(s.trace)),
            tasks=[TaskStateBody.of(t) for t in s.tasks],
            type=s.type,
        )


class TaskInfoBody(BaseModel):
    id: TaskId
    config: dict[str, str]


class CreateConnectorBody(_Body):
    name: str = Field(min_length=1)
    config: ConfigMap
    initial_state: Literal["RUNNING", "PAUSED", "STOPPED"] | None = None


class OffsetEntry(_Body):
    partition: dict[str, str | JavaLong]
    offset: dict[str, JavaLong] | None


class ConnectorOffsetsBody(_Body):
    offsets: list[OffsetEntry]


class PluginBody(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    class_: str = Field(alias="class", serialization_alias="class")
    type: Literal["source", "sink"]
    version: str


class ConfigKeyDefinition(BaseModel):
    name: str
    type: str
    required: bool
    default_value: str | None
    importance: str
    documentation: str
    group: str | None
    order: int
    width: str
    display_name: str
    dependents: list[str]


class ConfigValueInfo(BaseModel):
    name: str
    value: str | None
    recommended_values: list[str]
    errors: list[str]
    visible: bool


class ConfigInfo(BaseModel):
    definition: ConfigKeyDefinition
    value: ConfigValueInfo


class ConfigInfos(BaseModel):
    name: str
    error_count: int
    groups: list[str]
    configs: list[ConfigInfo]


class LagBody(BaseModel):
    partitions: int
    records: int = Field(description="records on the source not yet on the target")
    max_seconds: float = Field(description="age of the oldest record not yet copied, at most")
    records_copied: int


class EventBody(BaseModel):
    time: str = Field(description="when, ISO 8601 in UTC")
    kind: str = Field(description="topic-recreated, records-gone or log-truncated")
    message: str


class FlowBody(BaseModel):
    source: str
    target: str
    enabled: bool
    state: str
    connectors: list[str]
    lag: LagBody
    cause: str | None = Field(
        default=None, description="why the flow is not RUNNING (null when it is)"
    )
    runs_on: str | None = Field(
        default=None,
        description="the REST URL of the process that runs this flow, when this one is its "
        "standby (that process reports the flow's state and lag)",
    )
    events: list[EventBody] = Field(
        default_factory=list,
        description="what the flow went through that a state does not show for long (a source "
        "topic re-created, records deleted before they were copied, a source log truncated), "
        "the newest 20, oldest first",
    )

    @classmethod
    def of(cls, f: FlowView) -> FlowBody:
        lag = LagBody(
            partitions=f.lag.partitions,
            records=f.lag.records,
            max_seconds=f.lag.max_seconds,
            records_copied=f.lag.records_copied,
        )
        return cls(
            source=f.source,
            target=f.target,
            enabled=f.enabled,
            state=f.state,
            connectors=list(f.connectors),
            lag=lag,
            cause=f.cause,
            runs_on=f.runs_on,
            events=[
                EventBody(
                    time=datetime.fromtimestamp(e.time_ms / 1000, UTC).isoformat(),
                    kind=e.kind,
                    message=e.message,
                )
                for e in f.events
            ],
        )


class GroupPartitionBody(BaseModel):
    """One partition of a group: its commit on the source, where it would resume on the target,
    its commit there now, and how far behind each side is."""

    model_config = ConfigDict(extra="allow")

    source_topic: str
    source_partition: int
    source_offset: int = Field(description="the group's commit on the source")
    target_topic: str | None
    target_partition: int | None
    target_offset: int | None = Field(
        description="the source commit translated to the target (null: not translated, see note)"
    )
    exact: bool
    rereads_at_most: int | None
    current_target_offset: int | None = Field(description="the group's commit on the target now")
    note: str
    source_log_end: int | None = Field(
        default=None,
        description="the source partition's log end (last stable offset) as the flow's lag "
        "monitor last read it (null: not a partition this flow copies, or not read yet)",
    )
    source_lag: int | None = Field(
        default=None,
        description="records the group has still to read on the source: source_log_end - "
        "source_offset",
    )
    target_behind: int | None = Field(
        default=None,
        description="records between the group's commit on the target and where it would resume "
        "there: target_offset - current_target_offset (negative: the target commit is ahead, "
        "and a failover keeps it)",
    )


class GroupPlanBody(BaseModel):
    """One group's translation, as `mm2 translate-offsets --json` prints it, with whether
    `mm2 failover` would move it now and why."""

    model_config = ConfigDict(extra="allow")

    group: str
    partitions: list[GroupPartitionBody]
    ready: bool = Field(
        default=False,
        description="failover-ready: every partition of a topic this flow mirrors is "
        "translated (`mm2 failover` also refuses while the group has members on the target: "
        "not checked here)",
    )
    why: str = Field(default="", description="what `mm2 failover --dry-run` would say, briefly")

    @classmethod
    def of(
        cls, plan: FailoverPlan, log_ends: Mapping[tuple[str, int], int] | None = None
    ) -> GroupPlanBody:
        """`log_ends`: the source's log ends by (topic, partition), from the flow's lag report."""
        ends = log_ends or {}
        ready, why = failover_readiness(plan)
        partitions = []
        for m in plan.moves:
            end = ends.get((m.source.topic, m.source.partition))
            now, then = m.current_target_offset, m.target_offset
            partitions.append(
                {
                    **m.to_json(),
                    "source_log_end": end,
                    "source_lag": None if end is None else max(0, end - m.source_offset),
                    "target_behind": None if now is None or then is None else then - now,
                }
            )
        return cls.model_validate(
            {**plan.to_json(), "partitions": partitions, "ready": ready, "why": why}
        )


def failover_readiness(plan: FailoverPlan) -> tuple[bool, str]:
    """(ready, why): whether `mm2 failover` would move every partition of the group that this
    flow mirrors now, in the words of its dry run. A partition of a topic the flow does not
    mirror is left alone by a failover and does not count against it."""
    mirrored = [m for m in plan.moves if m.target is not None]
    blocked = [m for m in mirrored if not m.translated]
    notes = "; ".join(sorted({m.note for m in blocked} | set(plan.notes)))
    if not mirrored:
        return False, "nothing to commit: none of its partitions is mirrored by this flow"
    if not plan.translated:
        return False, f"nothing to commit: no partition translated ({notes})"
    if blocked:
        return False, f"{len(blocked)} of {len(mirrored)} partition(s) not translated: {notes}"
    current = {
        m.target: OffsetAndMetadata(m.current_target_offset)
        for m in mirrored
        if m.target is not None and m.current_target_offset is not None
    }
    commit, kept = commits_for(plan, current, force=False)
    exact = sum(1 for m in plan.translated if m.exact)
    rereads = plan.rereads_at_most
    said = [
        f"{len(plan.translated)} partition(s) translated from {plan.basis}, {exact} exact",
        "records re-read: " + ("unknown" if rereads is None else f"at most {rereads}"),
        f"{len(commit)} to commit",
    ]
    if kept:
        said.append(f"{len(kept)} kept: the target's commit is ahead")
    if len(mirrored) < len(plan.moves):
        said.append(f"{len(plan.moves) - len(mirrored)} not mirrored by this flow: left alone")
    return True, "; ".join(said)


class GroupsOffsetsBody(BaseModel):
    source: str
    target: str
    groups: list[GroupPlanBody]


class PartitionAtRiskBody(BaseModel):
    topic: str
    partition: int
    copied_to: int | None = Field(
        description="the next source offset the mirror would copy (null: never copied)"
    )
    source_end: int | None = Field(
        description="the source partition's end offset (high watermark) as last read (null: "
        "never read)"
    )
    ends_read_at_ms: int | None = Field(
        description="when that end was asked for, milliseconds since the epoch"
    )
    current: bool = Field(
        description="the end was read from the source for this report, after the positions"
    )
    at_risk_at_most: int | None = Field(
        description="records missing on the target, at most (markers and aborted records count "
        "too); null when unknown: the end is not current"
    )
    unknown_since_ms: int | None = Field(
        description="when not current: the time the end was read at, after which what the "
        "source holds is unknown"
    )
    uncopied_below_end: int | None = Field(
        description="offsets below source_end not copied now (a floor of what was there to "
        "lose when it was read, never a bound)"
    )


class RecoveryPointBody(BaseModel):
    """What an unplanned failover of the flow loses: a bound when the source's ends were read
    for this report, else unknown since a time."""

    source: str
    target: str
    read_at_ms: int
    at_risk_at_most: int | None = Field(
        description="the sum over the partitions when each is a bound; null: unknown"
    )
    unknown_since_ms: int | None = Field(
        description="when at_risk_at_most is null: the oldest time a partition's end was read "
        "at (null too when some partition's end was never read)"
    )
    unknown_partitions: int = Field(description="partitions without a bound")
    uncopied_below_ends: int = Field(description="the sum of uncopied_below_end")
    source_problem: str | None = Field(description="why the source's ends are not current")
    summary: str = Field(description="the same sentence `mm2 failover` prints")
    partitions: list[PartitionAtRiskBody]


class SwitchoverRequestBody(BaseModel):
    """POST /flows/{source}/{target}/switchover: a dry run unless `dry_run` is false."""

    model_config = ConfigDict(extra="forbid")

    dry_run: bool = Field(
        default=True, description="check and show lag and group plans, change nothing"
    )
    start_reverse: bool = Field(
        default=False, description="resume the flow back once this one is paused"
    )
    drain_timeout_seconds: float = Field(
        default=300.0, gt=0, le=86_400, description="how long to wait for lag 0"
    )


class SwitchoverBody(BaseModel):
    """A switchover the process runs or ran last for the flow: what it said, and its report
    (per partition the source end, the copied offset and what was not copied; each group's
    move; each step's time and whether it failed: the registries' step fails without stopping
    the others, `failed_steps` lists them and `done` is false) once it ended."""

    flow: str
    dry_run: bool
    start_reverse: bool
    running: bool
    started_ms: int
    finished_ms: int | None
    said: list[str]
    error: str = Field(description="why it stopped before the end; empty when it did not")
    report: dict[str, Any] | None

    @classmethod
    def of(cls, job: SwitchoverJob) -> SwitchoverBody:
        return cls(
            flow=job.flow,
            dry_run=job.dry_run,
            start_reverse=job.start_reverse,
            running=job.running,
            started_ms=job.started_ms,
            finished_ms=job.finished_ms,
            said=list(job.said),
            error=job.error,
            report=None if job.report is None else job.report.to_json(),
        )


class HistoryPointBody(BaseModel):
    time_ms: int = Field(description="when it was sampled, milliseconds since the epoch")
    lag_records: int = Field(description="records on the source not yet on the target")
    lag_seconds: float = Field(description="age of the oldest record not yet copied, at most")
    records_per_second: float = Field(
        description="records copied per second over the 30 s before (as /metrics' record_rate)"
    )


class FlowHistoryBody(BaseModel):
    """A flow's lag and throughput over the last hour, as this process sampled them."""

    source: str
    target: str
    sample_seconds: float = Field(description="how often the process samples")
    keep_seconds: float = Field(description="how far back the samples go, at most")
    points: list[HistoryPointBody] = Field(
        description="oldest first; empty until the first sample (a flow another process runs "
        "is sampled there: this request is forwarded to it)"
    )


class PartitionBody(BaseModel):
    """One source partition of a flow, as the Consumer Offset Checker showed a group's."""

    topic: str
    partition: int
    target_topic: str
    log_end: int = Field(description="the source's last stable offset (log end)")
    position: int | None = Field(description="next offset to copy; null: never copied")
    lag_records: int
    lag_seconds: float = Field(description="age of the oldest record not copied yet")
    owner: str | None = Field(description="the copy task that has the partition now")
    state: str


class FlowHealthBody(BaseModel):
    status: str
    causes: dict[str, str]


class FlowCreateBody(_Body):
    source: str = Field(min_length=1, examples=["primary"])
    target: str = Field(min_length=1, examples=["backup"])
    clusters: dict[str, ConfigMap] = Field(
        default_factory=dict,
        description="new clusters by alias: their mm2.properties keys without the alias prefix",
        examples=[{"backup": {"bootstrap.servers": "backup-kafka:9092"}}],
    )
    overrides: ConfigMap = Field(
        default_factory=dict,
        description="the flow's `source->target.*` keys without that prefix",
        examples=[{"topics": "orders.*"}],
    )
