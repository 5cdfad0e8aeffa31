"""What the project's own REST clients (the CLI, a standby forwarding to its leader) send with
every change; no import beyond the standard library, so that a client loads no web framework.

mm2.api.csrf refuses a browser's change without REQUEST_HEADER: another site's page cannot
make a browser set it.
"""

from __future__ import annotations

__all__ = ["CHANGE_HEADERS", "REQUEST_HEADER", "REQUEST_HEADER_VALUE"]

REQUEST_HEADER = "X-MM2-Request"
REQUEST_HEADER_VALUE = "1"
CHANGE_HEADERS = {REQUEST_HEADER: REQUEST_HEADER_VALUE}
