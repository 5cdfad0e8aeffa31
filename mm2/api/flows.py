"""/flows: replication flows as resources; pausing a flow pauses all its connectors."""

from __future__ import annotations

from typing import Annotated, Any, cast

from fastapi import APIRouter, Depends, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse

from mm2.api.deps import Mirror
from mm2.api.forward import forward_headers, runners_views
from mm2.api.history import FlowHistory
from mm2.api.routed_flows import RoutedFlows
from mm2.api.schemas import (
    FlowBody,
    FlowCreateBody,
    FlowHistoryBody,
    GroupPlanBody,
    GroupsOffsetsBody,
    HistoryPointBody,
    PartitionBody,
    RecoveryPointBody,
    SwitchoverBody,
    SwitchoverRequestBody,
    error_responses,
)
from mm2.errors import NotFoundError

__all__ = ["router"]

router = APIRouter(prefix="/flows", tags=["flows"], responses=error_responses(400, 404, 409))


def _history(request: Request) -> FlowHistory:
    return cast(FlowHistory, request.app.state.history)


History = Annotated[FlowHistory, Depends(_history)]


@router.get("", response_model=list[FlowBody])
async def list_flows(mirror: Mirror, request: Request) -> list[FlowBody]:
    """Every flow, each as the process that runs it sees it (its state and lag are real only
    there): a standby asks the leaders, and shows its own view of a flow whose leader does not
    answer."""
    local = await run_in_threadpool(mirror.flows.views)  # may read Kafka: off the event loop
    remote = await runners_views(request, mirror, [(f.source, f.target) for f in local])
    return [
        FlowBody.model_validate(remote[(f.source, f.target)])
        if (f.source, f.target) in remote
        else FlowBody.of(f)
        for f in local
    ]


@router.post("", status_code=201, response_model=FlowBody)
def add_flow(mirror: Mirror, body: FlowCreateBody) -> JSONResponse:
    view = mirror.flows.add(body.source, body.target, body.clusters, body.overrides)
    location = f"/flows/{view.source}/{view.target}"
    return JSONResponse(FlowBody.of(view).model_dump(), 201, headers={"Location": location})


@router.get("/{source}/{target}", response_model=FlowBody)
def get_flow(mirror: Mirror, source: str, target: str) -> FlowBody:
    return FlowBody.of(mirror.flows.view(source, target))


@router.get("/{source}/{target}/partitions", response_model=list[PartitionBody])
def flow_partitions(mirror: Mirror, source: str, target: str) -> list[PartitionBody]:
    """Per source partition: log end, copied position, lag in records and seconds, owner task
    (read from Kafka every few seconds; empty until the first read)."""
    view = mirror.flows.view(source, target)
    report = mirror.flows.lag(source, target)
    snaps = {
        (s.topic, s.partition): s
        for s in mirror.metrics.snapshot()
        if (s.source, s.target) == (source, target)
    }
    worker = mirror.worker_id
    rows = []
    for p in report.partitions if report is not None else ():
        snap = snaps.get((p.topic, p.partition))
        owner = snap.owner if snap is not None and view.state != "UNASSIGNED" else None
        rows.append(
            PartitionBody(
                topic=p.topic,
                partition=p.partition,
                target_topic=snap.target_topic if snap is not None else "",
                log_end=p.log_end,
                position=p.position,
                lag_records=p.records,
                lag_seconds=round(p.seconds, 3),
                owner=None if owner is None else f"{worker} copy task {owner}",
                state=view.state,
            )
        )
    return rows


@router.get("/{source}/{target}/groups/offsets", response_model=GroupsOffsetsBody)
def flow_group_offsets(mirror: Mirror, source: str, target: str) -> GroupsOffsetsBody:
    """Every consumer group the flow mirrors, translated to the target in one call (KIP-1239):
    per group and partition, where it would resume on the target, whether that is exact and
    how many records it may read again, its lag on the source and how far its commit on the
    target is behind the translation; per group, whether `mm2 failover` would move it now and
    why. Read from the source's commits and the offset syncs, by any process; the source's log
    ends are the flow's lag monitor's last read (null where this process has none)."""
    plans = mirror.flows.group_offsets(source, target)
    report = mirror.flows.lag(source, target)
    ends = {(p.topic, p.partition): p.log_end for p in report.partitions} if report else {}
    return GroupsOffsetsBody(
        source=source, target=target, groups=[GroupPlanBody.of(p, ends) for p in plans]
    )


@router.post("/{source}/{target}/groups/{group}/failover", response_model=dict[str, Any])
def failover_group(
    mirror: Mirror, source: str, target: str, group: str, force: bool = False
) -> dict[str, Any]:
    """`mm2 failover --group`: the group's commits on the source, translated, committed on the
    target (never backwards unless `force`). 409, with nothing committed, while the group has
    members on the target or no partition translates."""
    plan, applied = mirror.flows.failover_group(source, target, group, force=force)
    doc = plan.to_json()
    doc["applied"] = applied.to_json()
    return doc


@router.get("/{source}/{target}/recovery-point", response_model=RecoveryPointBody)
def flow_recovery_point(mirror: Mirror, source: str, target: str) -> RecoveryPointBody:
    """Per source partition: how far the flow copied, the source's end offset and when it was
    read, and so the records an unplanned failover now would lose at most: a bound only when
    the source answered for this report (after the positions were read); else null, unknown
    since the time the ends the target holds were read. The positions come from the offsets
    topic on the target: it answers with the source cluster gone."""
    point = mirror.flows.recovery_point(source, target)
    return RecoveryPointBody.model_validate({"source": source, "target": target, **point.to_json()})


@router.post("/{source}/{target}/switchover", status_code=202, response_model=SwitchoverBody)
def start_switchover(
    request: Request,
    mirror: Mirror,
    source: str,
    target: str,
    body: SwitchoverRequestBody | None = None,
) -> SwitchoverBody:
    """Start a planned switchover of the flow (a dry run unless `dry_run` is false): check,
    drain to lag 0, commit every mirrored group on the target, pause the flow and, with
    `start_reverse`, resume the flow back. It runs in the process that runs the flow (any
    process sends it there); follow it with GET on any process. 409 while one runs for the
    flow."""
    body = body or SwitchoverRequestBody()
    control = RoutedFlows(mirror, forward_headers(request, mirror))
    job = mirror.switchovers.start(
        source,
        target,
        dry_run=body.dry_run,
        start_reverse=body.start_reverse,
        drain_timeout=body.drain_timeout_seconds,
        control=control,
    )
    return SwitchoverBody.of(job)


@router.get("/{source}/{target}/switchover", response_model=SwitchoverBody)
def switchover_status(mirror: Mirror, source: str, target: str) -> SwitchoverBody:
    """The flow's running or last switchover: what it said so far, and its report once done.
    404 when none ran since the process started."""
    job = mirror.switchovers.job(source, target)
    if job is None:
        raise NotFoundError(f"no switchover of {source}->{target} since this process started")
    return SwitchoverBody.of(job)


@router.get("/{source}/{target}/history", response_model=FlowHistoryBody)
def flow_history(mirror: Mirror, history: History, source: str, target: str) -> FlowHistoryBody:
    """The flow's lag and throughput over the last hour, oldest first, as the process that
    runs it sampled them every few seconds (kept in its memory: empty after a restart until
    the first sample). /ui draws its charts from it."""
    mirror.flows.view(source, target)  # NotFoundError (404) for a flow that does not exist
    points = [
        HistoryPointBody(
            time_ms=p.time_ms,
            lag_records=p.lag_records,
            lag_seconds=p.lag_seconds,
            records_per_second=p.records_per_second,
        )
        for p in history.points(source, target)
    ]
    return FlowHistoryBody(
        source=source,
        target=target,
        sample_seconds=history.every,
        keep_seconds=history.keep,
        points=points,
    )


@router.put("/{source}/{target}/pause", status_code=202)
def pause_flow(mirror: Mirror, source: str, target: str) -> Response:
    mirror.flows.pause(source, target)
    return Response(status_code=202)


@router.put("/{source}/{target}/resume", status_code=202)
def resume_flow(mirror: Mirror, source: str, target: str) -> Response:
    mirror.flows.resume(source, target)
    return Response(status_code=202)


@router.put("/{source}/{target}/stop", status_code=204)
def stop_flow(mirror: Mirror, source: str, target: str) -> Response:
    mirror.flows.stop(source, target)
    return Response(status_code=204)


@router.delete("/{source}/{target}", status_code=204)
def delete_flow(mirror: Mirror, source: str, target: str) -> Response:
    mirror.flows.remove(source, target)
    return Response(status_code=204)
