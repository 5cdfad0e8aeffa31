"""No change made by another site's page: state-changing requests a browser sends cross-site
are refused before routing, so a refused request changes nothing.

A browser that holds the operator's Basic credentials for the mirror sends them with any
request another site's page makes it send: a form posted to `/connectors/{c}/restart` needs
no script and no CORS preflight. For POST, PUT, PATCH and DELETE this middleware answers 403
(in the API's error shape, naming the cause) when

- the `Origin` header is present and is not the request's own origin (its scheme and the
  `Host` header it was sent with); `Origin: null` (a sandboxed frame, a redirect, a `file:`
  page) is foreign;
- `Sec-Fetch-Site` says `cross-site` or `same-site` (a sibling subdomain is another site's
  page too);
- a browser sent it (it carries `Origin` or a `Sec-Fetch-*` header) as a request it could send
  cross-site without a preflight (no body, or a form or text/plain body) and without the
  `X-MM2-Request` header (any value; the project's clients send `1`), which a page can set
  only on a request to its own origin (mm2.api.client_headers).

Requests that carry neither `Origin` nor `Sec-Fetch-*` (curl, Connect REST clients, scripts)
pass without the header: a page cannot make a browser leave both out. The /ui's script, the
CLI and a standby forwarding to its leader send the header on every change.
"""

from __future__ import annotations

import logging
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.types import Receive, Scope, Send

from mm2.api.client_headers import REQUEST_HEADER, REQUEST_HEADER_VALUE
from mm2.api.errors import error_response
from mm2.api.middleware import HttpMiddleware

__all__ = ["STATE_CHANGING", "CrossSiteMiddleware", "refusal"]

log = logging.getLogger(__name__)

STATE_CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# Content types a page may send to another origin without a CORS preflight.
_SIMPLE_TYPES = frozenset(
    {"application/x-www-form-urlencoded", "multipart/form-data", "text/plain"}
)
_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}


def _origin(scheme: str, netloc: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) of scheme://netloc, the default port filled in; None if malformed."""
    try:
        parts = urlsplit(f"{scheme}://{netloc}")
        port = parts.port
    except ValueError:
        return None
    if not parts.hostname or parts.path or parts.query or parts.fragment:
        return None
    return parts.scheme, parts.hostname, port or _DEFAULT_PORTS.get(parts.scheme, 0)


def own_origin(scope: Scope, headers: Headers) -> tuple[str, str, int] | None:
    """The origin the request was sent to: the scheme it came in with and its Host header."""
    host = headers.get("host")
    return None if not host else _origin(str(scope.get("scheme", "http")), host)


def _given_origin(value: str) -> tuple[str, str, int] | None:
    scheme, separator, rest = value.strip().partition("://")
    return _origin(scheme.lower(), rest) if separator else None


def refusal(scope: Scope, headers: Headers) -> str | None:
    """Why this request must not be served (None: serve it)."""
    if str(scope.get("method", "")).upper() not in STATE_CHANGING:
        return None
    origin = headers.get("origin")
    if origin is not None:
        given, own = _given_origin(origin), own_origin(scope, headers)
        if given is None or own is None or given != own:
            return (
                f"Cross-site request refused: Origin {origin!r} is not this API's own origin; "
                "changes are taken only from the mirror's own pages and from clients that are "
                "not browsers"
            )
    site = (headers.get("sec-fetch-site") or "").strip().lower()
    if site in ("cross-site", "same-site"):
        return (
            f"Cross-site request refused: Sec-Fetch-Site is {site!r}; changes are taken only "
            "from the mirror's own pages and from clients that are not browsers"
        )
    browser = origin is not None or any(k.startswith("sec-fetch-") for k in headers)
    media = (headers.get("content-type") or "").partition(";")[0].strip().lower()
    simple = not media or media in _SIMPLE_TYPES
    if browser and simple and not headers.get(REQUEST_HEADER):
        return (
            f"Request refused: a browser's {scope['method']} without a JSON body needs the "
            f"{REQUEST_HEADER} header (send '{REQUEST_HEADER}: {REQUEST_HEADER_VALUE}'), which "
            "another site's page cannot set"
        )
    return None


class CrossSiteMiddleware(HttpMiddleware):
    """403 for a state-changing request another site's page made a browser send."""

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        why = refusal(scope, Headers(scope=scope))
        if why is None:
            await self.app(scope, receive, send)
            return
        log.warning("REST: %s %s refused: %s", scope["method"], scope.get("path", ""), why)
        await error_response(403, why)(scope, receive, send)
