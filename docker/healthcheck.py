"""The image's HEALTHCHECK: exit 0 when the mirror's REST health endpoint answers 200, else 1.

Standard library only (the slim image has no curl). Environment:
  MM2_HEALTH_URL          default http://127.0.0.1:8083/health (503 while the worker starts);
                          .../health/flows is stricter: 503 while an enabled flow is not copying
  MM2_HEALTH_CREDENTIALS  a file holding `user:password`, for a REST listener behind Basic auth
  MM2_HEALTH_TIMEOUT      seconds, default 4
An https URL is checked against the system CAs, or SSL_CERT_FILE's.
"""

from __future__ import annotations

import base64
import os
import sys
import urllib.error
import urllib.request
from pathlib import Path

DEFAULT_URL = "http://127.0.0.1:8083/health"


def probe(url: str, credentials: str | None, timeout: float) -> tuple[bool, str]:
    """(healthy, one line saying what answered)."""
    request = urllib.request.Request(url, method="GET")  # noqa: S310 (the operator's URL)
    if credentials:
        token = base64.b64encode(credentials.encode("utf-8")).decode("ascii")
        request.add_header("Authorization", f"Basic {token}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:  # noqa: S310
            return True, f"{url}: {answer.status}"
    except urllib.error.HTTPError as error:
        return False, f"{url}: {error.code} {error.read(300).decode('utf-8', 'replace')}"
    except (urllib.error.URLError, OSError) as error:
        return False, f"{url}: {error}"


def main() -> int:
    url = os.environ.get("MM2_HEALTH_URL") or DEFAULT_URL
    credentials_file = os.environ.get("MM2_HEALTH_CREDENTIALS")
    credentials = None
    if credentials_file:
        try:
            credentials = Path(credentials_file).read_text(encoding="utf-8").strip()
        except OSError as error:
            print(f"MM2_HEALTH_CREDENTIALS: {error}", file=sys.stderr)  # noqa: T201
            return 1
    healthy, line = probe(url, credentials, float(os.environ.get("MM2_HEALTH_TIMEOUT") or 4))
    print(line, file=sys.stdout if healthy else sys.stderr)
    return 0 if healthy else 1


if __name__ == "__main__":
    sys.exit(main())
