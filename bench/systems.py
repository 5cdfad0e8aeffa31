"""The mirrors under test: their mm2.properties and their processes, run alike.

`mm2` is this project with its defaults (exactly-once on), `apache` is Apache MM2 with its
defaults. `mm2-at-least-once` is this project with `exactly.once.source.support = disabled`
(idempotent, at-least-once), to measure what exactly-once costs; it runs only when asked for
(`--systems mm2,mm2-at-least-once,apache`). `apache-exactly-once` is Apache MM2 configured for
exactly-once as its docs say (`exactly.once.source.support = enabled` on the target, the internal
REST server of dedicated mode on, the source read read_committed), to compare like with like;
it too runs only when asked for. `mm2-schemas` is this project with a schema registry
on each side (`--avro` only, bench.avro): the IDs in the records are rewritten on the way.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal

from bench.apache import LOG4J2, MAIN_CLASS
from mm2.localcluster import find_java

__all__ = [
    "ALL_SYSTEMS",
    "APACHE_EXACTLY_ONCE",
    "AT_LEAST_ONCE",
    "SCHEMAS",
    "SYSTEMS",
    "MirrorProcess",
    "SystemName",
    "free_port",
    "is_ours",
    "mirror_properties",
    "start_mirror",
]

SystemName = Literal["mm2", "mm2-at-least-once", "mm2-schemas", "apache", "apache-exactly-once"]
AT_LEAST_ONCE: SystemName = "mm2-at-least-once"
APACHE_EXACTLY_ONCE: SystemName = "apache-exactly-once"
SCHEMAS: SystemName = "mm2-schemas"
SYSTEMS: tuple[SystemName, ...] = ("mm2", "apache")  # the default run
ALL_SYSTEMS: tuple[SystemName, ...] = ("mm2", AT_LEAST_ONCE, SCHEMAS, "apache", APACHE_EXACTLY_ONCE)
LABELS: dict[SystemName, str] = {
    "mm2": "mm2 (this project)",
    AT_LEAST_ONCE: "mm2, exactly-once disabled",
    SCHEMAS: "mm2, schema IDs translated",
    "apache": "Apache MM2",
    APACHE_EXACTLY_ONCE: "Apache MM2, exactly-once enabled",
}


def is_ours(system: SystemName) -> bool:
    """This project's connect-mirror-maker, whatever its settings."""
    return system not in ("apache", APACHE_EXACTLY_ONCE)


# What bin/connect-mirror-maker.sh gives Apache MM2: its heap and kafka-run-class's JVM flags.
APACHE_JVM = (
    "-Xms256M",
    "-Xmx2G",
    "-server",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-Djava.awt.headless=true",
)

# One broker per cluster: every topic a mirror creates has one replica (tests use it too).
ONE_REPLICA = """\
replication.factor = 1
checkpoints.topic.replication.factor = 1
heartbeats.topic.replication.factor = 1
offset-syncs.topic.replication.factor = 1
offset.storage.replication.factor = 1
status.storage.replication.factor = 1
config.storage.replication.factor = 1
"""

# Equal for both systems.
_COMMON = (
    """\
clusters = primary, backup
primary.bootstrap.servers = {primary}
backup.bootstrap.servers = {backup}
primary->backup.enabled = true
primary->backup.topics = {topics}
backup->primary.enabled = false
tasks.max = {tasks}

"""
    + ONE_REPLICA
    + """
# No authorizer on the local brokers: nothing to sync.
sync.topic.acls.enabled = false

# Same consumer fetch sizes (Apache's client defaults, spelled out: librdkafka's differ) and
# target producer rules. How long a fetch waits for more records is each system's own default.
primary.consumer.auto.offset.reset = earliest
primary.consumer.fetch.max.bytes = 52428800
primary.consumer.max.partition.fetch.bytes = 1048576
backup.producer.acks = all
backup.producer.compression.type = none
"""
)
_MM2_ONLY = """
mm2.state.dir = {state}
"""
# The one difference of the at-least-once run: positions are written after the records are
# acknowledged, outside any transaction (idempotent producer, no transactions).
_AT_LEAST_ONCE_ONLY = """exactly.once.source.support = disabled
"""
# Apache MM2's exactly-once in dedicated mode (docs/ops.html, KIP-618 and KIP-710): the target's
# worker setting, the internal REST server it needs, and a source read read_committed.
_APACHE_EXACTLY_ONCE_ONLY = """backup.exactly.once.source.support = enabled
dedicated.mode.enable.internal.rest = true
listeners = http://127.0.0.1:{port}
primary.consumer.isolation.level = read_committed
"""


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def mirror_properties(
    system: SystemName,
    *,
    primary: str,
    backup: str,
    topics: str,
    tasks_max: int,
    state_dir: Path,
    extra: Mapping[str, str] | None = None,
) -> str:
    """The mm2.properties each system is run with; only our state directory differs (and
    exactly-once, for the at-least-once run of ours)."""
    text = _COMMON.format(primary=primary, backup=backup, topics=topics, tasks=tasks_max)
    if is_ours(system):
        text += _MM2_ONLY.format(state=state_dir)
    if system == AT_LEAST_ONCE:
        text += _AT_LEAST_ONCE_ONLY
    if system == APACHE_EXACTLY_ONCE:
        text += _APACHE_EXACTLY_ONCE_ONLY.format(port=free_port())
    for key, value in (extra or {}).items():
        text += f"{key} = {value}\n"
    return text


@dataclass
class MirrorProcess:
    system: SystemName
    popen: subprocess.Popen[bytes]
    log_path: Path
    _log: IO[bytes]

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def stop(self, grace_s: float = 60.0) -> int | None:
        """SIGTERM (both stop cleanly on it), SIGKILL after grace_s; the exit code."""
        if self.alive():
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(grace_s)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(30)
        if not self._log.closed:
            self._log.close()
        return self.popen.returncode

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


def _our_command(properties: Path) -> list[str]:
    script = Path(sys.executable).with_name("connect-mirror-maker")
    if script.is_file():
        return [str(script), str(properties)]
    return [sys.executable, "-m", "mm2.cli.mirror_maker", str(properties)]


def _apache_command(properties: Path, classpath: tuple[Path, ...], workdir: Path) -> list[str]:
    log4j = workdir / "apache-log4j2.properties"
    log4j.write_text(LOG4J2, encoding="utf-8")
    return [
        str(find_java().executable),
        *APACHE_JVM,
        f"-Dlog4j2.configurationFile={log4j}",
        "-cp",
        os.pathsep.join(str(j) for j in classpath),
        MAIN_CLASS,
        str(properties),
    ]


def start_mirror(
    system: SystemName,
    properties_text: str,
    workdir: Path,
    *,
    apache_classpath: tuple[Path, ...] = (),
) -> MirrorProcess:
    """Write the properties into workdir and start the system on them, logging to a file."""
    workdir.mkdir(parents=True, exist_ok=True)
    properties = workdir / "mm2.properties"
    properties.write_text(properties_text, encoding="utf-8")
    if is_ours(system):
        command = _our_command(properties)
    else:
        command = _apache_command(properties, apache_classpath, workdir)
    log_path = workdir / "mirror.log"
    log = log_path.open("wb")
    popen = subprocess.Popen(
        command,
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=workdir,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        start_new_session=True,  # Ctrl-C on the bench reaches the mirror through stop() only
    )
    return MirrorProcess(system, popen, log_path, log)
