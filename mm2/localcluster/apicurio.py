"""Apicurio Registry servers on loopback, for the schema tests and the bench's Avro runs.

`make apicurio` unpacks Apicurio Registry 3.0.9's ready server under ~/.cache/mm2 (or where
MM2_APICURIO_HOME says); each `ApicurioRegistry` runs it in a JVM of its own, with in-memory
storage (its default) and its own free HTTP and management ports, and serves Confluent's API
under `/apis/ccompat/v7`. Apicurio assigns its own IDs whatever a registration asks for, so a
pair of them is a real source and target for the translating path.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Self

import httpx

from mm2.localcluster.java import C1_ONLY, find_java
from mm2.localcluster.ports import LOOPBACK, free_port
from mm2.localcluster.process import Service

__all__ = ["APICURIO_VERSION", "ApicurioRegistry", "RegistryStartError", "apicurio_home"]

APICURIO_VERSION = "3.0.9"
_START_DEADLINE_S = 180.0  # ~6 s alone; a 2-core machine under a benchmark takes far longer
_STOP_DEADLINE_S = 20.0


class RegistryStartError(RuntimeError):
    """The registry's JVM exited or did not answer in time; the message ends with its log."""


def apicurio_home() -> Path:
    """Where `make apicurio` unpacked the server (MM2_APICURIO_HOME overrides)."""
    given = os.environ.get("MM2_APICURIO_HOME")
    if given:
        return Path(given)
    return Path.home() / ".cache" / "mm2" / f"apicurio-{APICURIO_VERSION}"


def _runner_jar(home: Path) -> Path:
    jar = home / f"apicurio-registry-app-{APICURIO_VERSION}-runner.jar"
    if not jar.is_file():
        raise RegistryStartError(f"{jar} is missing: run `make apicurio` first")
    return jar


class ApicurioRegistry(Service):
    """One Apicurio server: `start()` waits until it answers Confluent's API, `stop()` ends it
    (SIGTERM, then SIGKILL after a while). Also a context manager."""

    def __init__(self, name: str, workdir: Path) -> None:
        self.name = name
        self.port = free_port()
        self.management_port = free_port()
        self._log_path = workdir / f"apicurio-{name}.log"
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The Confluent-compatible API's base URL (what `schema.registry.url` takes)."""
        return f"http://{LOOPBACK}:{self.port}/apis/ccompat/v7"

    def start(self) -> Self:
        self.launch()
        self.wait_ready()
        return self

    def launch(self) -> None:
        """Start the JVM without waiting for it (`wait_ready` waits)."""
        java = str(find_java().executable)
        jar = _runner_jar(apicurio_home())
        command = [
            java,
            "-Xmx384m",
            C1_ONLY,
            f"-Dquarkus.http.host={LOOPBACK}",
            f"-Dquarkus.http.port={self.port}",
            f"-Dquarkus.management.port={self.management_port}",
            "-jar",
            str(jar),
        ]
        with self._log_path.open("wb") as log:
            self._process = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, cwd=jar.parent
            )

    def wait_ready(self) -> None:
        """Until `GET /subjects` answers 200; RegistryStartError when the JVM exits or the
        deadline passes."""
        assert self._process is not None, "launch() first"
        deadline = time.monotonic() + _START_DEADLINE_S
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RegistryStartError(
                    f"Apicurio {self.name} exited with {self._process.returncode}:\n{self._tail()}"
                )
            try:
                if httpx.get(f"{self.url}/subjects", timeout=2.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        self.stop()
        raise RegistryStartError(
            f"Apicurio {self.name} did not answer {self.url}/subjects within "
            f"{_START_DEADLINE_S:.0f} s:\n{self._tail()}"
        )

    def _tail(self, lines: int = 40) -> str:
        try:
            text = self._log_path.read_text(errors="replace")
        except OSError as exc:
            return f"(no log: {exc})"
        return "\n".join(text.splitlines()[-lines:])

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(_STOP_DEADLINE_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(_STOP_DEADLINE_S)
