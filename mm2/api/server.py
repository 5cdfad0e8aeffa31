"""uvicorn servers for the configured listeners, on threads next to the worker."""

from __future__ import annotations

import logging
import socket
import ssl
import threading
import time

import uvicorn
from fastapi import FastAPI

from mm2.runtime.rest_config import RestConfig

__all__ = ["RestServer"]

log = logging.getLogger(__name__)

_CERT_REQS = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}


class RestServer:
    """One uvicorn server per listener; sockets are bound in start(), so errors surface there."""

    def __init__(self, app: FastAPI, config: RestConfig) -> None:
        self._app = app
        self._config = config
        self._servers: list[tuple[uvicorn.Server, threading.Thread]] = []
        self.urls: list[str] = []

    def start(self, timeout: float = 30.0) -> list[str]:
        """Bind every listener and serve; returns the URLs (the real port when 0 was asked)."""
        for listener in self._config.listeners:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind((listener.bind_host, listener.port))
            except OSError:
                sock.close()
                self.stop()
                raise
            port = sock.getsockname()[1]
            tls = self._config.tls if listener.scheme == "https" else None
            config = uvicorn.Config(
                self._app,
                log_level="warning",
                log_config=None,  # uvicorn's records go through our handlers and format
                access_log=False,
                lifespan="off",
                ssl_certfile=tls.certfile if tls else None,
                ssl_keyfile=tls.keyfile if tls else None,
                ssl_keyfile_password=tls.password if tls else None,
                ssl_cert_reqs=_CERT_REQS[tls.client_auth] if tls else ssl.CERT_NONE,
                ssl_ca_certs=tls.cafile if tls else None,
            )
            server = uvicorn.Server(config)
            thread = threading.Thread(
                target=server.run, kwargs={"sockets": [sock]}, name=f"rest-{port}", daemon=True
            )
            thread.start()
            self._servers.append((server, thread))
            self.urls.append(self._config.url(listener, port))
        deadline = time.monotonic() + timeout
        while not all(s.started for s, t in self._servers if t.is_alive()):
            if time.monotonic() > deadline:
                break
            time.sleep(0.02)
        dead = [t.name for _, t in self._servers if not t.is_alive()]
        if dead:
            self.stop()
            raise OSError(f"REST listener(s) {', '.join(dead)} failed to start")
        return self.urls

    def stop(self) -> None:
        for server, _ in self._servers:
            server.should_exit = True
        for _, thread in self._servers:
            thread.join(10)
        self._servers.clear()
