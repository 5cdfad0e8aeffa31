"""The FastAPI application: Connect's REST resources, flows, metrics, one error mapping."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastapi import Depends, FastAPI
from fastapi.openapi.utils import get_openapi
from fastapi_offline import FastAPIOffline

from mm2 import __version__
from mm2.api import connectors, flows, root, ui
from mm2.api.client_headers import REQUEST_HEADER
from mm2.api.csrf import STATE_CHANGING, CrossSiteMiddleware
from mm2.api.errors import install_error_handlers
from mm2.api.forward import Forwarded, forward_to_leader, forwarded_response
from mm2.api.history import FlowHistory
from mm2.api.limits import BodyLimitMiddleware
from mm2.api.metrics import metrics_registry
from mm2.api.redaction import RedactionMiddleware
from mm2.api.security import SCHEME, BasicAuthMiddleware
from mm2.runtime.view import RuntimeView

__all__ = ["create_app", "openapi_document"]

_DESCRIPTION = """\
Kafka Connect's REST API for the connectors of every flow, flows as resources, and Prometheus
metrics. Connectors are named `<source>.<target>.<ConnectorClass>`. Errors come back as
`{"error_code": N, "message": "..."}`, with `errors` per field for invalid input.
"""


def create_app(mirror: RuntimeView, *, credentials: Mapping[str, str] | None = None) -> FastAPI:
    """The app for `mirror`; with `credentials` (user -> password) every request needs Basic
    auth, whatever its path or method, before anything else (forwarding to a leader included)."""
    app = _routes(secured=credentials is not None)
    # The last middleware added runs first: authentication, the refusal of changes another
    # site's page sends (before routing: a refused request changes nothing), the body size
    # limit, then the redaction of answers (closest to the routes, so it sees every answer).
    app.add_middleware(RedactionMiddleware)
    app.add_middleware(BodyLimitMiddleware)
    app.add_middleware(CrossSiteMiddleware)
    if credentials is not None:  # an empty users file lets nobody in, as in Connect
        app.add_middleware(BasicAuthMiddleware, credentials=credentials)
    app.state.mirror = mirror
    app.state.metrics_registry = metrics_registry(mirror)
    # /ui's charts: each flow's last hour, sampled from now on (the thread ends with the app).
    history = FlowHistory(mirror)
    history.start()
    app.state.history = history
    install_error_handlers(app)
    app.add_exception_handler(Forwarded, forwarded_response)
    return app


def openapi_document(*, secured: bool = False) -> dict[str, Any]:
    """The OpenAPI document create_app serves at /openapi.json, without a mirror behind it
    (docs/rest-reference.md is generated from it)."""
    return _routes(secured=secured).openapi()


def _routes(*, secured: bool) -> FastAPI:
    """The app's routes and its OpenAPI document, nothing that needs a mirror."""
    # FastAPIOffline: /docs and /redoc load their scripts from the package, not from a CDN.
    app = FastAPIOffline(
        title="mm2 REST API",
        version=__version__,
        description=_DESCRIPTION,
        dependencies=[Depends(forward_to_leader)],  # runs after the middlewares
        static_url="/docs-assets",
    )
    app.include_router(root.router)
    app.include_router(connectors.router)
    app.include_router(flows.router)
    app.include_router(ui.router)
    app.mount("/ui/assets", ui.assets(), name="ui-assets")
    app.openapi = lambda: _openapi(app, secured=secured)  # type: ignore[method-assign]
    return app


def _openapi(app: FastAPI, *, secured: bool) -> dict[str, Any]:
    """FastAPI documents invalid input as 422; we answer 400 in Connect's error shape. Every
    change declares the 403 of mm2.api.csrf; with authentication on, every operation declares
    HTTP Basic and its 401."""
    if app.openapi_schema is None:
        doc = get_openapi(
            title=app.title, version=app.version, description=app.description, routes=app.routes
        )
        error = {"$ref": "#/components/schemas/ErrorBody"}
        for operations in doc.get("paths", {}).values():
            for method, operation in operations.items():
                responses = operation.get("responses", {})
                if method.upper() in STATE_CHANGING:
                    responses.setdefault(
                        "403",
                        {
                            "description": "Sent by a browser from another site, or by a browser "
                            f"without the {REQUEST_HEADER} header",
                            "content": {"application/json": {"schema": error}},
                        },
                    )
                if responses.pop("422", None) is not None:
                    responses.setdefault(
                        "400",
                        {
                            "description": "Invalid request",
                            "content": {"application/json": {"schema": error}},
                        },
                    )
                if secured:
                    responses.setdefault(
                        "401",
                        {
                            "description": "Credentials missing or wrong",
                            "content": {"application/json": {"schema": error}},
                        },
                    )
        for unused in ("HTTPValidationError", "ValidationError"):
            doc.get("components", {}).get("schemas", {}).pop(unused, None)
        if secured:
            doc.setdefault("components", {})["securitySchemes"] = {
                SCHEME: {"type": "http", "scheme": "basic"}
            }
            doc["security"] = [{SCHEME: []}]
        app.openapi_schema = doc
    return app.openapi_schema
