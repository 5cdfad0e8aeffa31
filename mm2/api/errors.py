"""The one error-to-HTTP mapping: Kafka Connect's `{"error_code": N, "message": "..."}` body.

A message never shows a value a config provider resolved: the reference is shown instead.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException
from starlette.routing import Match

from mm2.config.providers import redact
from mm2.errors import (
    BadRequestError,
    ConfigError,
    ConflictError,
    KafkaClientError,
    MM2Error,
    NotFoundError,
)

__all__ = ["install_error_handlers", "status_of"]

log = logging.getLogger(__name__)


def status_of(exc: Exception) -> int:
    if isinstance(exc, NotFoundError):
        return 404
    if isinstance(exc, ConflictError):
        return 409
    if isinstance(exc, BadRequestError | ConfigError):
        return 400
    if isinstance(exc, KafkaClientError):  # the cluster's condition, not a fault of the server
        return 503 if exc.retriable else 502
    return 500


def error_response(
    status: int, message: str, errors: dict[str, list[str]] | None = None
) -> JSONResponse:
    body: dict[str, object] = {"error_code": status, "message": redact(message)}
    if errors:
        body["errors"] = {redact(k): [redact(e) for e in v] for k, v in errors.items()}
    return JSONResponse(body, status_code=status)


async def _mm2_error(request: Request, exc: Exception) -> JSONResponse:
    status = status_of(exc)
    errors = exc.errors if isinstance(exc, BadRequestError) else None
    if isinstance(exc, ConfigError) and exc.key:
        errors = {exc.key: [exc.detail]}
    if status == 500:
        log.error("%s %s failed: %s", request.method, request.url.path, exc)
    elif status >= 500:
        log.warning("%s %s: %s", request.method, request.url.path, exc)
    return error_response(status, str(exc), errors)


async def _invalid_request(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors: dict[str, list[str]] = {}
    for e in exc.errors():
        where = ".".join(str(p) for p in e.get("loc", ()) if p != "body") or "body"
        errors.setdefault(where, []).append(str(e.get("msg", "invalid")))
    summary = "; ".join(f"{k}: {', '.join(v)}" for k, v in errors.items())
    return error_response(400, f"Invalid request: {summary}", errors)


_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def _allowed_methods(request: Request) -> str:
    """Every method some route serves at this path (Starlette's own 405 names only the
    methods of the first route that matched the path, one of several): each is tried."""
    routes = request.app.router.routes
    return ", ".join(
        method
        for method in _METHODS
        if any(r.matches({**request.scope, "method": method})[0] == Match.FULL for r in routes)
    )


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HTTPException)
    message = str(exc.detail)
    headers = dict(exc.headers or {})
    if exc.status_code == 405:
        headers["Allow"] = _allowed_methods(request)
        message = f"HTTP method {request.method} is not allowed here; use {headers['Allow']}"
    response = error_response(exc.status_code, message)
    for key, value in headers.items():
        response.headers[key] = value
    return response


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    log.exception("%s %s failed", request.method, request.url.path)
    return error_response(500, f"{type(exc).__name__}: {exc}")


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(MM2Error, _mm2_error)
    app.add_exception_handler(RequestValidationError, _invalid_request)
    app.add_exception_handler(HTTPException, _http_error)
    app.add_exception_handler(Exception, _unexpected)
