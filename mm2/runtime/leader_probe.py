"""Is the leader's process gone? Its REST port refuses connections after it accepted them.

A leader killed -9 keeps its seat in the election group until its session times out (10 s by
default, 6 s at the least a broker allows), and its flows wait that long. Its host, though,
refuses connections to its REST port at once. A standby that has seen that port accept
connections and now sees it refuse them, `refusals` times in a row, knows the process is gone
and takes its flows over (mm2.runtime.standby); the leader epoch keeps that safe even if it
were wrong. A port that never accepted (a URL this host cannot reach, a listener on another
host's loopback) and a port that does not answer at all (a lost host, a partition) prove
nothing: those wait for the session as before.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from urllib.parse import urlsplit

__all__ = ["LeaderProbe", "connect"]

# "accepted", "refused" or "silent" (a timeout or any other failure)
Outcome = str


def connect(host: str, port: int, timeout: float) -> Outcome:
    """One TCP connection attempt to the leader's REST port."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return "accepted"
    except ConnectionRefusedError:
        return "refused"
    except OSError:
        return "silent"


class LeaderProbe:
    """Remembers, per URL, whether it accepted once and how often it refused since."""

    def __init__(
        self,
        *,
        refusals: int = 2,
        timeout: float = 1.0,
        attempt: Callable[[str, int, float], Outcome] = connect,
    ) -> None:
        self._refusals = refusals
        self._timeout = timeout
        self._attempt = attempt
        self._accepted: set[str] = set()
        self._refused: dict[str, int] = {}

    def gone(self, url: str) -> bool:
        """Probe `url` once: True when it accepted before and has now refused `refusals`
        times in a row."""
        parts = urlsplit(url)
        if not parts.hostname:
            return False
        default = 443 if parts.scheme == "https" else 80
        outcome = self._attempt(parts.hostname, parts.port or default, self._timeout)
        if outcome == "accepted":
            self._accepted.add(url)
            self._refused.pop(url, None)
            return False
        if outcome != "refused" or url not in self._accepted:
            self._refused.pop(url, None)
            return False
        self._refused[url] = self._refused.get(url, 0) + 1
        return self._refused[url] >= self._refusals

    def forget(self, url: str) -> None:
        """After a takeover: the URL must accept again before it can be found gone again."""
        self._accepted.discard(url)
        self._refused.pop(url, None)
