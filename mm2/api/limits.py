"""Request bodies of at most 1 MiB: a larger one is answered 413 before it is read or parsed.

No request of this API needs more (a connector config is a few KiB); without a limit a 10 MB
body kept a request busy for up to a minute and went on into the stored changes.
"""

from __future__ import annotations

from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mm2.api.errors import error_response
from mm2.api.middleware import HttpMiddleware

__all__ = ["MAX_BODY_BYTES", "BodyLimitMiddleware"]

MAX_BODY_BYTES = 1024 * 1024
_TOO_LARGE = f"Request body larger than {MAX_BODY_BYTES} bytes (1 MiB)"


class BodyLimitMiddleware(HttpMiddleware):
    """413 for a body over `limit` bytes: at once from Content-Length, or while a chunked body
    streams in (the handler reading it then gets the 413)."""

    def __init__(self, app: ASGIApp, *, limit: int = MAX_BODY_BYTES) -> None:
        super().__init__(app)
        self.limit = limit

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        length = Headers(scope=scope).get("content-length")
        if length is not None and length.strip().isdigit() and int(length) > self.limit:
            await error_response(413, _TOO_LARGE)(scope, receive, send)
            return
        received = 0

        async def limited() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    raise HTTPException(413, _TOO_LARGE)
            return message

        await self.app(scope, limited, send)
