"""/flows: replication flows as resources; pausing a flow pauses all its connectors."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response
from fastapi.responses import JSONResponse

from api.deps import Mirror
from api.schemas import ErrorBody, FlowBody, FlowCreateBody

__all__ = ["router"]

_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorBody},
    404: {"model": ErrorBody},
    409: {"model": ErrorBody},
}
router = APIRouter(prefix="/flows", tags=["flows"], responses=_ERRORS)


@router.get("", response_model=list[FlowBody])
def list_flows(mirror: Mirror) -> list[FlowBody]:
    return [FlowBody.of(f) for f in mirror.flows()]


@router.post("", status_code=201, response_model=FlowBody)
def add_flow(mirror: Mirror, body: FlowCreateBody) -> JSONResponse:
    view = mirror.add_flow(body.source, body.target, body.clusters, body.overrides)
    location = f"/flows/{view.source}/{view.target}"
    return JSONResponse(FlowBody.of(view).model_dump(), 201, headers={"Location": location})


@router.get("/{source}/{target}", response_model=FlowBody)
def get_flow(mirror: Mirror, source: str, target: str) -> FlowBody:
    return FlowBody.of(mirror.flow(source, target))


@router.put("/{source}/{target}/pause", status_code=202)
def pause_flow(mirror: Mirror, source: str, target: str) -> Response:
    mirror.pause_flow(source, target)
    return Response(status_code=202)


@router.put("/{source}/{target}/resume", status_code=202)
def resume_flow(mirror: Mirror, source: str, target: str) -> Response:
    mirror.resume_flow(source, target)
    return Response(status_code=202)


@router.put("/{source}/{target}/stop", status_code=204)
def stop_flow(mirror: Mirror, source: str, target: str) -> Response:
    mirror.stop_flow(source, target)
    return Response(status_code=204)


@router.delete("/{source}/{target}", status_code=204)
def delete_flow(mirror: Mirror, source: str, target: str) -> Response:
    mirror.remove_flow(source, target)
    return Response(status_code=204)
