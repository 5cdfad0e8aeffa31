"""A standby's REST API: requests go where the work is, as Connect forwards to its leader.

- Changes (POST, PUT, PATCH, DELETE on /connectors and /flows) go to the leader of the cluster
  that keeps REST changes, which writes them to Kafka; every process then applies them.
- Restarts go to the leader of the connector's target cluster, the one running its tasks;
  so do switchovers, which then read each flow's state from its runner and change flows
  through the writer (mm2.api.routed_flows): any process answers a switchover's status by
  asking the runner, where the job is.
- Reads of one flow or connector go to the leader that runs it, so its state is the real one;
  if that leader does not answer, this process answers from what it knows.
- Offsets are read from Kafka by any process, and changed by the leader that runs the flow
  (once its tasks have ended); lists come from the shared config: any process answers them,
  and `/flows` takes each flow's state and lag from the leader that runs it (`runners_views`).

A request is forwarded at most once (the `X-MM2-Forwarded-By` header); authentication is
checked here before anything is forwarded, and the caller's credentials go along.
"""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Any, cast

import httpx
from fastapi import Request, Response

from mm2.api.client_headers import CHANGE_HEADERS
from mm2.errors import ConflictError, NotFoundError
from mm2.runtime.naming import flow_name
from mm2.runtime.standby import Leader
from mm2.runtime.view import RuntimeView

__all__ = [
    "FORWARDED",
    "Forwarded",
    "forward_headers",
    "forward_to_leader",
    "forwarded_response",
    "runners_views",
]

log = logging.getLogger(__name__)

FORWARDED = "X-MM2-Forwarded-By"
_READS = {"GET", "HEAD", "OPTIONS"}
_FLOW = re.compile(r"^/flows/([^/]+)/([^/]+)(?:/.*)?$")
_CONNECTOR = re.compile(r"^/connectors/([^/]+)(/.*)?$")
_RESTART = re.compile(r"^(?:/tasks/\d+)?/restart$")
_SWITCHOVER = re.compile(r"^/flows/[^/]+/[^/]+/switchover$")
_KEEP_REQUEST = {"authorization", "content-type", "accept"}
_KEEP_RESPONSE = {"content-type", "location", "allow", "www-authenticate"}
# How long a list waits for each leader's view of its flows before it shows this process's.
VIEW_TIMEOUT_S = 2.0


class Forwarded(Exception):
    """The leader's answer, to be returned as it is."""

    def __init__(self, response: Response) -> None:
        super().__init__("forwarded")
        self.response = response


def _flow_of(mirror: RuntimeView, path: str) -> str | None:
    flow = _FLOW.match(path)
    if flow:
        return flow_name(flow.group(1), flow.group(2))
    connector = _CONNECTOR.match(path)
    if connector:
        try:
            return mirror.connectors.flow_of(connector.group(1))
        except NotFoundError:
            return None
    return None


def _to_runner(mirror: RuntimeView, path: str) -> Leader | None:
    """The leader that runs the flow of `path` (None: this process does, or no flow)."""
    flow = _flow_of(mirror, path)
    if flow is None or mirror.leadership.leads(flow):
        return None
    leader = mirror.leadership.runner(flow)
    if leader is None:
        raise ConflictError(f"{flow} has no leader yet (an election is under way); try again")
    return leader


def route(mirror: RuntimeView, method: str, path: str) -> tuple[Leader | None, bool]:
    """(where the request must go, None for here; whether it is a read)."""
    if not path.startswith(("/connectors", "/flows")):
        return None, True
    if "/offsets" in path:
        # Read from Kafka by any process; changed by the one that runs the flow, which knows
        # that its tasks have ended, so no stop-time write of theirs undoes the change.
        return (None, True) if method in _READS else (_to_runner(mirror, path), False)
    connector = _CONNECTOR.match(path)
    if connector and _RESTART.match(connector.group(2) or ""):
        return _to_runner(mirror, path), False
    if _SWITCHOVER.match(path) and method not in _READS:
        return _to_runner(mirror, path), False  # the job runs there; its status is read there
    if method not in _READS:
        return mirror.leadership.writer(), False
    flow = _flow_of(mirror, path)
    return (None if flow is None else mirror.leadership.runner(flow)), True


async def forward_to_leader(request: Request) -> None:
    """The dependency that sends a request on to the leader that must answer it."""
    if request.headers.get(FORWARDED):
        return  # forwarded once already: this process answers
    mirror = cast(RuntimeView, request.app.state.mirror)
    leader, read = route(mirror, request.method, request.url.path)
    if leader is None:
        return
    url = leader.url.rstrip("/") + request.url.path
    if request.url.query:
        url += "?" + request.url.query
    headers = forward_headers(request, mirror)
    try:
        async with httpx.AsyncClient(timeout=60.0) as client:
            answer = await client.request(
                request.method, url, content=await request.body(), headers=headers
            )
    except httpx.HTTPError as exc:
        if read:
            log.info(
                "leader %s of %s did not answer (%s); answering here",
                leader.url,
                leader.cluster,
                exc,
            )
            return
        raise ConflictError(
            f"the leader of {leader.cluster} ({leader.url}) did not answer ({exc}); if it is "
            "gone, a standby takes over within the group's session timeout: try again"
        ) from None
    kept = {k: v for k, v in answer.headers.items() if k.lower() in _KEEP_RESPONSE}
    raise Forwarded(Response(answer.content, answer.status_code, headers=kept))


async def forwarded_response(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, Forwarded)
    return exc.response


def forward_headers(request: Request, mirror: RuntimeView) -> dict[str, str]:
    """What a request sent on to another process carries: the caller's credentials and
    content headers, the forwarded mark (that process answers itself), the change header."""
    headers = {k: v for k, v in request.headers.items() if k.lower() in _KEEP_REQUEST}
    headers[FORWARDED] = mirror.url or "?"
    headers.update(CHANGE_HEADERS)  # checked here already (mm2.api.csrf); the leader checks again
    return headers


async def runners_views(
    request: Request, mirror: RuntimeView, flows: list[tuple[str, str]]
) -> dict[tuple[str, str], dict[str, Any]]:
    """For each (source, target) flow that another process runs, that process's own view of it
    (`GET /flows/<source>/<target>` there, with `runs_on` naming it), asked of all the leaders
    at once; a flow whose leader does not answer within VIEW_TIMEOUT_S, or that no one runs,
    is left out, and the caller shows what this process knows."""
    if request.headers.get(FORWARDED):
        return {}
    asked: dict[tuple[str, str], Leader] = {}
    for source, target in flows:
        name = flow_name(source, target)
        if not mirror.leadership.leads(name):
            leader = mirror.leadership.runner(name)
            if leader is not None and leader.url and leader.url != mirror.url:
                asked[(source, target)] = leader
    if not asked:
        return {}
    headers = forward_headers(request, mirror)

    async def one(client: httpx.AsyncClient, key: tuple[str, str]) -> dict[str, Any] | None:
        url = f"{asked[key].url.rstrip('/')}/flows/{key[0]}/{key[1]}"
        try:
            answer = await client.get(url, headers=headers)
        except httpx.HTTPError as exc:
            log.info(
                "leader %s did not answer for %s->%s (%s); showing this process's view",
                asked[key].url,
                key[0],
                key[1],
                exc,
            )
            return None
        if answer.status_code != 200:
            return None
        body = cast(dict[str, Any], answer.json())
        body["runs_on"] = asked[key].url
        return body

    async with httpx.AsyncClient(timeout=VIEW_TIMEOUT_S) as client:
        keys = list(asked)
        bodies = await asyncio.gather(*(one(client, k) for k in keys))
    return {k: b for k, b in zip(keys, bodies, strict=True) if b is not None}
