"""W6: the source cluster across a link, through Toxiproxy.

With `--link RTT_MS[:MBIT]` the primary broker gets a second client listener, LINK, advertised
at a Toxiproxy port: a mirror that bootstraps there learns that address from the broker's
metadata, so every request it sends to the source (fetches, metadata, the offset syncs it
writes there) crosses the proxy, which adds half the round trip in each direction and, with
MBIT, caps each direction's bandwidth. The bench's own clients (the fill, the W2 producer, the
verifier) use the broker's PLAINTEXT listener and do not cross it; the ceiling's plain
consumer does, as a mirror's would.

Toxiproxy (github.com/Shopify/toxiproxy, a TCP proxy made for this) is built once from the Go
module proxy with `go install` into ~/.cache/mm2/toxiproxy-<version>.
"""

from __future__ import annotations

import os
import random
import shutil
import socket
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import httpx

from bench.systems import free_port

__all__ = [
    "LINK_LISTENER",
    "Link",
    "LinkProxy",
    "parse_link",
    "reserved_port",
    "toxiproxy_server",
]

LINK_LISTENER = "LINK"
TOXIPROXY_MODULE = "github.com/Shopify/toxiproxy/v2/cmd/server"
TOXIPROXY_VERSION = "v2.5.0"  # the newest the Go module proxy here serves


@dataclass(frozen=True)
class Link:
    """A round trip of `rtt_ms` milliseconds and, unless 0, `mbit` Mbit/s each way."""

    rtt_ms: int
    mbit: int = 0

    def __str__(self) -> str:
        cap = f", {self.mbit} Mbit/s each way" if self.mbit else ""
        return f"{self.rtt_ms} ms round trip{cap}"


def parse_link(text: str) -> Link:
    """`RTT_MS` or `RTT_MS:MBIT`, e.g. `50` or `100:100`."""
    rtt, sep, mbit = text.partition(":")
    try:
        link = Link(int(rtt), int(mbit) if sep else 0)
    except ValueError:
        wanted = "RTT_MS or RTT_MS:MBIT (e.g. 50 or 100:100)"
        raise ValueError(f"--link takes {wanted}, not {text!r}") from None
    if link.rtt_ms < 0 or link.mbit < 0:
        raise ValueError(f"--link takes numbers of 0 or more, not {text!r}")
    return link


def reserved_port() -> int:
    """A free port on 127.0.0.1 below the kernel's ephemeral range, for the proxy.

    The source broker advertises the proxy's port before the proxy listens on it; a port from
    the ephemeral range could meanwhile be handed to any socket bound to port 0 (the brokers'
    own listeners start that way), and the proxy would find it taken.
    """
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    for port in random.sample(range(max(1024, low - 12000), low), 200):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port below the ephemeral range for the link's proxy")


def toxiproxy_server() -> Path:
    """The toxiproxy server binary, built by `go install` on first use."""
    home = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    folder = home / "mm2" / f"toxiproxy-{TOXIPROXY_VERSION}"
    binary = folder / "server"
    if binary.exists():
        return binary
    go = shutil.which("go")
    if go is None:
        raise RuntimeError("--link needs Toxiproxy, built with Go: no `go` command on PATH")
    folder.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [go, "install", f"{TOXIPROXY_MODULE}@{TOXIPROXY_VERSION}"],
        env={**os.environ, "GOBIN": str(folder)},
        capture_output=True,
        text=True,
        timeout=900,
    )
    if done.returncode != 0 or not binary.exists():
        raise RuntimeError(f"go install {TOXIPROXY_MODULE} failed:\n{done.stderr[-2000:]}")
    return binary


class LinkProxy:
    """One Toxiproxy server with one proxy, 127.0.0.1:`listen_port` -> `upstream`, shaped as
    `link` says; a context manager that stops the server on exit."""

    def __init__(self, link: Link, listen_port: int, upstream: str, workdir: Path) -> None:
        self.link = link
        self.listen = f"127.0.0.1:{listen_port}"
        self._upstream = upstream
        self._log = workdir / "toxiproxy.log"
        # free_port is in the kernel's ephemeral range; the proxy's port (reserved_port) is
        # below it, so the two never coincide.
        self._api_port = free_port()
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def _api(self) -> str:
        return f"http://127.0.0.1:{self._api_port}"

    def start(self) -> LinkProxy:
        self._log.parent.mkdir(parents=True, exist_ok=True)
        with self._log.open("wb") as log:
            self._process = subprocess.Popen(
                [str(toxiproxy_server()), "-host", "127.0.0.1", "-port", str(self._api_port)],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(f"{self._api}/version", timeout=2).raise_for_status()
                break
            except httpx.HTTPError:
                if self._process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"toxiproxy did not start; see {self._log}") from None
                time.sleep(0.2)
        proxy = {"name": "source", "listen": self.listen, "upstream": self._upstream}
        self._post("/proxies", proxy)
        for stream in ("upstream", "downstream"):
            self._toxic(f"latency-{stream}", "latency", stream, latency=self.link.rtt_ms // 2)
            if self.link.mbit:
                # Toxiproxy's rate is in KB/s (1,000 bytes): 1 Mbit/s is 125 of them.
                self._toxic(f"bandwidth-{stream}", "bandwidth", stream, rate=self.link.mbit * 125)
        return self

    def _toxic(self, name: str, kind: str, stream: str, **attributes: int) -> None:
        body = {"name": name, "type": kind, "stream": stream, "toxicity": 1.0}
        self._post("/proxies/source/toxics", {**body, "attributes": attributes})

    def _post(self, path: str, body: Mapping[str, object]) -> None:
        answer = httpx.post(self._api + path, json=body, timeout=10)
        if answer.status_code >= 300:
            raise RuntimeError(f"toxiproxy refused {path}: {answer.status_code} {answer.text}")

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()

    def __enter__(self) -> LinkProxy:
        try:
            return self.start()
        except BaseException:
            self.stop()  # a server whose proxy could not be made is stopped, not left behind
            raise

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
