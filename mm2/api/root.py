"""GET / (version), GET /health, /connector-plugins and GET /metrics (Prometheus text)."""

from __future__ import annotations

from typing import Annotated, Any

import httpx
from fastapi import APIRouter, Body, Path, Query, Request, Response
from fastapi.responses import JSONResponse

from mm2 import __version__
from mm2.api.deps import Mirror
from mm2.api.forward import FORWARDED
from mm2.api.schemas import (
    ConfigInfo,
    ConfigInfos,
    ConfigKeyDefinition,
    ConfigMap,
    ConfigValueInfo,
    FlowHealthBody,
    HealthBody,
    LeaderBody,
    PluginBody,
    ServerInfoBody,
    error_responses,
    mask,
)
from mm2.config.model import is_password
from mm2.config.names import CONNECTOR_CLASSES
from mm2.config.providers import redact
from mm2.config.value_types import TYPES

__all__ = ["router"]

router = APIRouter(tags=["worker"])

# How long /health/flows waits for the leader that runs a flow to answer its GET /health.
LEADER_PROBE_S = 2.0


@router.get("/", response_model=ServerInfoBody)
def server_info() -> ServerInfoBody:
    return ServerInfoBody(version=__version__, commit="", kafka_cluster_id=None)


@router.get(
    "/health",
    response_model=HealthBody,
    responses={503: {"model": HealthBody, "description": "still starting"}},
)
def health(mirror: Mirror) -> JSONResponse:
    if mirror.healthy:
        body = HealthBody(status="healthy", message="Worker has completed startup and is ready")
        return JSONResponse(body.model_dump(), 200)
    body = HealthBody(status="starting", message="Worker is still starting up")
    return JSONResponse(body.model_dump(), 503)


@router.get(
    "/health/flows",
    response_model=FlowHealthBody,
    responses={503: {"model": FlowHealthBody, "description": "an enabled flow is not copying"}},
)
def flows_health(mirror: Mirror) -> JSONResponse:
    """For load balancers and Kubernetes probes: 503 with the causes while an enabled flow is
    not copying (FAILED, DEGRADED, PAUSED, STOPPED, or no process runs it); 200 otherwise. A
    flow another process runs is that process's to report, as long as it answers: a leader
    that does not (killed, before the election moves its flows) makes them not copying."""
    causes = {}
    silent: dict[str, str | None] = {}  # leader URL -> why it does not answer (None: it does)
    for view in mirror.flows.views():
        if not view.enabled or (view.state == "RUNNING" and not view.runs_on):
            continue
        name = f"{view.source}->{view.target}"
        if view.runs_on:
            if view.runs_on not in silent:
                silent[view.runs_on] = leader_answers(view.runs_on, mirror.url)
            why = silent[view.runs_on]
            if why is not None:
                causes[name] = (
                    f"UNASSIGNED: runs on {view.runs_on}, which does not answer ({why}); a "
                    "standby takes over once the election's session timeout has passed"
                )
            continue
        causes[name] = f"{view.state}: {view.cause}"
    body = FlowHealthBody(status="not copying" if causes else "copying", causes=causes)
    return JSONResponse(body.model_dump(), 503 if causes else 200)


def leader_answers(url: str, me: str | None) -> str | None:
    """None when the process at `url` answers GET /health within LEADER_PROBE_S; else why
    not (its flows then copy nowhere)."""
    try:
        answer = httpx.get(
            url.rstrip("/") + "/health", timeout=LEADER_PROBE_S, headers={FORWARDED: me or "?"}
        )
    except httpx.HTTPError as exc:
        return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return None if answer.status_code < 500 else f"HTTP {answer.status_code}"


@router.get("/leaders", response_model=dict[str, LeaderBody | None])
def leaders(mirror: Mirror) -> dict[str, LeaderBody | None]:
    """Per target cluster, the process that runs its flows (null: none elected yet); empty
    when this process runs without elections."""
    return {
        cluster: None
        if leader is None
        else LeaderBody(url=leader.url, worker_id=leader.worker_id, this_worker=leader.this_worker)
        for cluster, leader in mirror.leadership.leaders().items()
    }


@router.get("/connector-plugins", response_model=list[PluginBody], response_model_by_alias=True)
def plugins(
    mirror: Mirror, connectors_only: Annotated[bool, Query(alias="connectorsOnly")] = True
) -> list[PluginBody]:
    return [
        PluginBody.model_validate(
            {"class": CONNECTOR_CLASSES.get(n, n), "type": p.connector_type, "version": p.version()}
        )
        for n, p in sorted(mirror.plugins.items())
    ]


def _config_info(key: str, value: str | None, errors: list[str]) -> ConfigInfo:
    kind = TYPES.get(key, "string")
    definition = ConfigKeyDefinition(
        name=key,
        type="PASSWORD"
        if is_password(key)
        else str(kind).upper()
        if isinstance(kind, str)
        else "STRING",
        required=key in ("connector.class", "source.cluster.alias", "target.cluster.alias"),
        default_value=None,
        importance="MEDIUM",
        documentation="",
        group=None,
        order=-1,
        width="NONE",
        display_name=key,
        dependents=[],
    )
    shown = value if value is None or not is_password(key) else mask({key: value})[key]
    return ConfigInfo(
        definition=definition,
        value=ConfigValueInfo(
            name=key,
            value=shown,
            recommended_values=[],
            errors=[redact(e) for e in errors],
            visible=True,
        ),
    )


@router.put(
    "/connector-plugins/{plugin}/config/validate",
    response_model=ConfigInfos,
    responses=error_responses(400, 404),
)
def validate(
    mirror: Mirror,
    plugin: Annotated[str, Path(description="simple or full class name")],
    config: Annotated[ConfigMap, Body()],
) -> ConfigInfos:
    check = mirror.connectors.validate(plugin, config)
    return ConfigInfos(
        name=check.plugin or plugin,
        error_count=check.error_count,
        groups=["Common"],
        configs=[_config_info(k, config.get(k), e) for k, e in check.errors.items()],
    )


@router.get(
    "/metrics",
    response_class=Response,
    responses={200: {"content": {"text/plain": {}}, "description": "Prometheus text format"}},
)
def metrics(request: Request) -> Response:
    from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

    registry: Any = request.app.state.metrics_registry
    text = redact(generate_latest(registry).decode("utf-8"))  # topic labels may carry one
    return Response(text, media_type=CONTENT_TYPE_LATEST)
