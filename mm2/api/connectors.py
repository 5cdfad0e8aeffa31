"""/connectors: Kafka Connect's REST resources for the connectors of every flow (reference §7.1)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Path, Query, Response
from fastapi.responses import JSONResponse

from mm2.api.deps import Mirror
from mm2.api.schemas import (
    ConfigMap,
    ConnectorInfoBody,
    ConnectorOffsetsBody,
    ConnectorStateBody,
    CreateConnectorBody,
    MessageBody,
    OffsetEntry,
    PatchMap,
    TaskId,
    TaskInfoBody,
    TaskStateBody,
    error_responses,
    mask,
)
from mm2.errors import ConflictError, NotFoundError
from mm2.runtime.offsets import ConnectorOffset

__all__ = ["router"]

router = APIRouter(
    prefix="/connectors", tags=["connectors"], responses=error_responses(400, 404, 409)
)
Name = Annotated[
    str,
    Path(
        description="`<source>.<target>.<ConnectorClass>`, e.g. "
        "primary.backup.MirrorSourceConnector (the plain class name works when it designates "
        "one connector)"
    ),
]


@router.get("", response_model=list[str] | dict[str, dict[str, Any]])
def list_connectors(
    mirror: Mirror,
    expand: Annotated[list[str], Query(description="status and/or info")] = [],  # noqa: B006
) -> list[str] | dict[str, dict[str, Any]]:
    names = mirror.connectors.names()
    if not {"status", "info"} & set(expand):
        return names
    out: dict[str, dict[str, Any]] = {}
    for name in names:
        entry: dict[str, Any] = {}
        if "status" in expand:
            entry["status"] = ConnectorStateBody.of(mirror.connectors.status(name)).model_dump()
        if "info" in expand:
            entry["info"] = ConnectorInfoBody.of(mirror.connectors.info(name)).model_dump()
        out[name] = entry
    return out


@router.post("", status_code=201, response_model=ConnectorInfoBody)
def create_connector(mirror: Mirror, body: CreateConnectorBody) -> JSONResponse:
    try:
        mirror.connectors.info(body.name)
    except NotFoundError:
        pass
    else:
        raise ConflictError(f"Connector {body.name} already exists")
    _, info = mirror.connectors.put_config(body.name, body.config)
    if body.initial_state == "PAUSED":
        mirror.connectors.pause(info.name)
    elif body.initial_state == "STOPPED":
        mirror.connectors.stop(info.name)
    content = ConnectorInfoBody.of(mirror.connectors.info(info.name)).model_dump()
    return JSONResponse(content, 201, headers={"Location": f"/connectors/{info.name}"})


@router.get("/{name}", response_model=ConnectorInfoBody)
def get_connector(mirror: Mirror, name: Name) -> ConnectorInfoBody:
    return ConnectorInfoBody.of(mirror.connectors.info(name))


@router.get("/{name}/config", response_model=dict[str, str])
def get_config(mirror: Mirror, name: Name) -> dict[str, str]:
    return mask(mirror.connectors.info(name).config)


@router.put(
    "/{name}/config",
    response_model=ConnectorInfoBody,
    responses={201: {"model": ConnectorInfoBody, "description": "created"}},
)
def put_config(mirror: Mirror, name: Name, config: Annotated[ConfigMap, Body()]) -> JSONResponse:
    created, info = mirror.connectors.put_config(name, config)
    content = ConnectorInfoBody.of(info).model_dump()
    if created:
        return JSONResponse(content, 201, headers={"Location": f"/connectors/{info.name}"})
    return JSONResponse(content, 200)


@router.patch("/{name}/config", response_model=ConnectorInfoBody)
def patch_config(
    mirror: Mirror, name: Name, patch: Annotated[PatchMap, Body()]
) -> ConnectorInfoBody:
    return ConnectorInfoBody.of(mirror.connectors.patch_config(name, patch))


@router.delete("/{name}", status_code=204)
def delete_connector(mirror: Mirror, name: Name) -> Response:
    mirror.connectors.delete(name)
    return Response(status_code=204)


@router.get("/{name}/status", response_model=ConnectorStateBody, response_model_exclude_none=True)
def connector_status(mirror: Mirror, name: Name) -> ConnectorStateBody:
    return ConnectorStateBody.of(mirror.connectors.status(name))


@router.put("/{name}/pause", status_code=202)
def pause(mirror: Mirror, name: Name) -> Response:
    mirror.connectors.pause(name)
    return Response(status_code=202)


@router.put("/{name}/resume", status_code=202)
def resume(mirror: Mirror, name: Name) -> Response:
    mirror.connectors.resume(name)
    return Response(status_code=202)


@router.put("/{name}/stop", status_code=204)
def stop(mirror: Mirror, name: Name) -> Response:
    mirror.connectors.stop(name)
    return Response(status_code=204)


@router.post(
    "/{name}/restart",
    status_code=204,
    responses={202: {"model": ConnectorStateBody, "description": "restarted with tasks"}},
)
def restart(
    mirror: Mirror,
    name: Name,
    include_tasks: Annotated[bool, Query(alias="includeTasks")] = False,
    only_failed: Annotated[bool, Query(alias="onlyFailed")] = False,
) -> Response:
    status = mirror.connectors.restart(name, include_tasks=include_tasks, only_failed=only_failed)
    if not include_tasks and not only_failed:
        return Response(status_code=204)
    body = ConnectorStateBody.of(status).model_dump(exclude_none=True)
    return JSONResponse(body, 202)


@router.get("/{name}/tasks", response_model=list[TaskInfoBody])
def tasks(mirror: Mirror, name: Name) -> list[TaskInfoBody]:
    full = mirror.connectors.info(name).name
    return [
        TaskInfoBody(id=TaskId(connector=full, task=i), config=mask(c))
        for i, c in enumerate(mirror.connectors.task_configs(name))
    ]


@router.get(
    "/{name}/tasks/{task}/status", response_model=TaskStateBody, response_model_exclude_none=True
)
def task_status(mirror: Mirror, name: Name, task: int) -> TaskStateBody:
    return TaskStateBody.of(mirror.connectors.task_status(name, task))


@router.post("/{name}/tasks/{task}/restart", status_code=204)
def restart_task(mirror: Mirror, name: Name, task: int) -> Response:
    mirror.connectors.restart_task(name, task)
    return Response(status_code=204)


@router.get("/{name}/offsets", response_model=ConnectorOffsetsBody)
def get_offsets(mirror: Mirror, name: Name) -> ConnectorOffsetsBody:
    entries = [
        OffsetEntry(partition=o.partition, offset=o.offset) for o in mirror.offsets.read(name)
    ]
    return ConnectorOffsetsBody(offsets=entries)


@router.patch("/{name}/offsets", response_model=MessageBody)
def alter_offsets(mirror: Mirror, name: Name, body: ConnectorOffsetsBody) -> MessageBody:
    mirror.offsets.alter(name, [ConnectorOffset(o.partition, o.offset) for o in body.offsets])
    return MessageBody(message="The offsets for this connector have been altered successfully")


@router.delete("/{name}/offsets", response_model=MessageBody)
def reset_offsets(mirror: Mirror, name: Name) -> MessageBody:
    mirror.offsets.reset(name)
    return MessageBody(message="The offsets for this connector have been reset successfully")
