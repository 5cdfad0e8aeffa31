"""Free loopback ports for local brokers, picked by binding port 0."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable

__all__ = ["LOOPBACK", "accepts", "free_port", "port_is_free"]

LOOPBACK = "127.0.0.1"


def free_port(host: str = LOOPBACK) -> int:
    """A port the kernel just reported free on `host` (another process may still take it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def port_is_free(host: str, port: int) -> bool:
    """Whether `host:port` can be bound right now (SO_REUSEADDR, as the JVM binds it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
        return True


def accepts(port: int, timeout: float, keep_waiting: Callable[[], bool]) -> bool:
    """Whether LOOPBACK:`port` accepts a connection within `timeout` seconds; False at once
    when `keep_waiting()` turns false (the process that should listen there exited)."""
    deadline = time.monotonic() + timeout
    while keep_waiting():
        try:
            with socket.create_connection((LOOPBACK, port), timeout=1):
                return True
        except OSError:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.1)
    return False
