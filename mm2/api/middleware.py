"""The base of the API's ASGI middlewares: each acts on HTTP requests only.

Anything else the server sends through the app (lifespan events, websockets) passes on as it
came, so a middleware's `http` is written for an HTTP scope alone.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["HttpMiddleware"]


class HttpMiddleware:
    """Calls `http` for an HTTP request; passes any other scope to `app` untouched."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        await self.http(scope, receive, send)

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        raise NotImplementedError
