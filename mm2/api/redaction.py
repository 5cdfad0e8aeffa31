"""Every REST answer with the values config providers resolved replaced by their references.

The views already show configs as given (mm2.runtime.mirror_maker); this is the net under
everything else an answer may quote: an error message, a trace, a cause, a metric label, an
answer forwarded from a leader. JSON is redacted string by string, so the answer stays JSON.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.datastructures import MutableHeaders
from starlette.types import Message, Receive, Scope, Send

from mm2.api.middleware import HttpMiddleware
from mm2.config.providers import redact

__all__ = ["RedactionMiddleware", "redact_body"]


def _strings(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [_strings(v) for v in value]
    if isinstance(value, dict):
        return {redact(k): _strings(v) for k, v in value.items()}
    return value


def redact_body(body: bytes, content_type: str) -> bytes:
    """`body` redacted; the same bytes when it quotes no resolved value."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return body
    if "json" in content_type:
        try:
            document = json.loads(text)
        except ValueError:
            document = None
        else:  # strings as they are, not as JSON escapes them
            redacted = _strings(document)
            if redacted == document:
                return body
            # as Starlette's JSONResponse renders it
            out = json.dumps(redacted, ensure_ascii=False, separators=(",", ":"))
            return out.encode("utf-8")
    hidden = redact(text)
    return body if hidden == text else hidden.encode("utf-8")


class RedactionMiddleware(HttpMiddleware):
    """Holds each answer's body until it is complete, then sends it redacted."""

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        start: Message | None = None
        chunks: list[bytes] = []

        async def redacting(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                start = message
                return
            if message["type"] != "http.response.body" or start is None:
                await send(message)
                return
            chunks.append(message.get("body", b""))
            if message.get("more_body", False):
                return
            headers = MutableHeaders(raw=start["headers"])
            body = redact_body(b"".join(chunks), headers.get("content-type", ""))
            if "content-length" in headers:
                headers["content-length"] = str(len(body))
            await send(start)
            await send({"type": "http.response.body", "body": body})

        await self.app(scope, receive, redacting)
