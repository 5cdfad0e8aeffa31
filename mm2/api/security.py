"""HTTP Basic authentication against the credentials Connect's PropertyFileLoginModule reads.

It is an ASGI middleware, so it comes before everything else on every request: routing (an
unknown path or a wrong method answers 401, not 404 or 405), the OpenAPI document and its
pages, and forwarding to a leader (api.forward, an app-level dependency that runs after it).
"""

from __future__ import annotations

import base64
import binascii
import hmac
import logging
from collections.abc import Mapping

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from mm2.api.errors import error_response
from mm2.api.middleware import HttpMiddleware

__all__ = ["SCHEME", "BasicAuthMiddleware"]

log = logging.getLogger(__name__)

# The OpenAPI name of the scheme (api.app declares it when authentication is on).
SCHEME = "basic"


def _credentials(header: str | None) -> tuple[str, str] | None:
    """(user, password) of an `Authorization: Basic ...` header. Decoded as UTF-8, as Connect's
    extension does (FastAPI's HTTPBasic takes ASCII only)."""
    scheme, _, param = (header or "").partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(param.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    user, separator, password = decoded.partition(":")
    return (user, password) if separator else None


class BasicAuthMiddleware(HttpMiddleware):
    """Lets a request through only with a known user and its password; 401 otherwise."""

    def __init__(self, app: ASGIApp, *, credentials: Mapping[str, str]) -> None:
        super().__init__(app)
        self._users = {user.encode(): password.encode() for user, password in credentials.items()}

    def _allowed(self, given: tuple[str, str] | None) -> bool:
        if given is None:
            return False
        expected = self._users.get(given[0].encode())
        # compare_digest against a dummy too: no timing hint whether the user exists
        ok = hmac.compare_digest(expected or b"\0", given[1].encode())
        if expected is not None and ok:
            return True
        log.warning("REST: authentication failed for user %r", given[0])
        return False

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._allowed(_credentials(Headers(scope=scope).get("authorization"))):
            await self.app(scope, receive, send)
            return
        response = error_response(
            401, "Credentials are missing or wrong; use HTTP Basic authentication"
        )
        response.headers["WWW-Authenticate"] = 'Basic realm="mm2"'
        await response(scope, receive, send)
