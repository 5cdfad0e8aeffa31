"""Single-node KRaft Kafka clusters on loopback: format, start, probe, stop (several at once:
mm2.localcluster.clusters).

A picked port that another process grabs before the JVM binds it is retried with fresh ports
(up to three attempts); a port the caller named that is taken is a BrokerStartError at once.
"""

from __future__ import annotations

import logging
import re
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Self

from mm2.errors import BrokerStartError, KafkaClientError
from mm2.kafka.admin import wait_until_ready
from mm2.localcluster import process, zookeeper
from mm2.localcluster.jars import KAFKA_VERSION, resolve_classpath
from mm2.localcluster.java import DEFAULT_JVM_OPTIONS, find_java
from mm2.localcluster.ports import accepts, free_port, port_is_free
from mm2.localcluster.properties import (
    DEFAULT_LISTENERS,
    LOG4J2,
    BrokerLayout,
    default_client_listener,
    layout_broker,
    new_cluster_id,
    render_properties,
)
from mm2.localcluster.security import SecureListener, listener_settings

__all__ = ["LocalCluster", "start_all", "stop_all"]

log = logging.getLogger(__name__)

_NODE_ID = 1
_ATTEMPTS = 3
_BIND_FAILURE = re.compile(r"BindException|Address already in use")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")


class LocalCluster(process.Service):
    """One Apache Kafka node (broker + controller, KRaft) in its own directory on loopback.

    >>> with LocalCluster("primary") as cluster:  # doctest: +SKIP
    ...     print(cluster.bootstrap_servers)
    127.0.0.1:40123
    """

    def __init__(
        self,
        name: str,
        *,
        workdir: Path | str | None = None,
        broker_config: Mapping[str, str] | None = None,
        client_listener: str | None = None,
        client_config: Mapping[str, str] | None = None,
        kafka_version: str = KAFKA_VERSION,
        jvm_options: Sequence[str] = DEFAULT_JVM_OPTIONS,
        start_timeout: float = 120.0,
        secure: Sequence[SecureListener] = (),
    ) -> None:
        """`secure`: listeners with Kerberos, SCRAM or mutual TLS (mm2.localcluster.security)
        added beside the others; the start probe and `client_config()` keep the PLAINTEXT one."""
        if not _NAME.match(name):
            raise BrokerStartError(f"cluster name {name!r} must be letters, digits, '.', '_', '-'")
        self.name = name
        self.kafka_version = kafka_version
        self.cluster_id = new_cluster_id()
        self._workdir = process.WorkDir(workdir, prefix=f"mm2-{name}-")
        self._broker_config = dict(broker_config or {})
        self._format_arguments: tuple[str, ...] = ()
        extra_jvm: tuple[str, ...] = ()
        if secure:
            listeners = self._broker_config.get("listeners", DEFAULT_LISTENERS)
            listeners, settings, extra_jvm, self._format_arguments = listener_settings(
                listeners, secure
            )
            self._broker_config = {**settings, **self._broker_config, "listeners": listeners}
        self._client_listener = client_listener
        self._client_config = dict(client_config or {})
        self._jvm_options = (*jvm_options, *extra_jvm)
        self._start_timeout = start_timeout
        self._layout: BrokerLayout | None = None
        self._command: list[str] = []
        self._process: subprocess.Popen[bytes] | None = None
        # Kafka before 3.0: the cluster's own ZooKeeper node (mm2.localcluster.zookeeper)
        self._zookeeper = zookeeper.is_zookeeper_version(kafka_version)
        self._zookeeper_process: subprocess.Popen[bytes] | None = None
        self._zookeeper_port = 0

    # -- what callers read -------------------------------------------------------------------

    @property
    def workdir(self) -> Path:
        return self._workdir.path(BrokerStartError(f"cluster {self.name!r} has not been started"))

    @property
    def log_path(self) -> Path:
        """The node's one log file: JVM output and Kafka's log4j2 lines."""
        return self.workdir / "server.log"

    @property
    def bootstrap_servers(self) -> str:
        layout = self._require_layout()
        name = self._client_listener or default_client_listener(layout)
        return layout.endpoint(name).address

    @property
    def listeners(self) -> Mapping[str, str]:
        """Listener name -> host:port, the controller's included."""
        return {e.name: e.address for e in self._require_layout().endpoints}

    @property
    def properties(self) -> Mapping[str, str]:
        return dict(self._require_layout().properties)

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def client_config(self) -> dict[str, str]:
        """librdkafka settings that reach this cluster (bootstrap plus the given client_config)."""
        return {"bootstrap.servers": self.bootstrap_servers, **self._client_config}

    def __repr__(self) -> str:
        where = self.bootstrap_servers if self._layout is not None else "not started"
        return f"LocalCluster({self.name!r}, {where})"

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> Self:
        """Format storage (first time), start the JVM and return once a client is answered."""
        start_all([self])
        return self

    def stop(self) -> None:
        """Stop the JVM (SIGTERM, then SIGKILL) and remove the directory if we made it."""
        stop_all([self])

    def halt(self, *, grace: float = 60.0) -> None:
        """Stop the JVM (SIGTERM, SIGKILL after `grace` s; 0 for a crash) but keep its directory,
        data and ports, so that resume() brings the same cluster back: an outage, for tests.

        A stop (clean or not) while copy tasks end their transactions can leave records open
        on the offsets topic with no marker to come; the mirror ends them itself when it next
        fences its copy tasks (mm2.copy.fencing). With `grace` 0 a commit can also be cut
        between the coordinator's decision and its markers (docs/architecture.md)."""
        if self._process is not None:
            if process.terminate([self._process], grace=grace) and grace > 0:
                log.warning(
                    "%s: the broker did not stop within %.0f s and was killed (a "
                    "transaction committing then may hang)",
                    self.name,
                    grace,
                )
            self._process = None

    def resume(self) -> LocalCluster:
        """Start a halted cluster's JVM again, on the same ports with its data."""
        if self.running:
            return self
        self._require_layout()
        self._launch()
        if not self._wait_once():
            raise self._failure(f"the broker exited on resume (exit code {self._exit_code()})")
        return self

    # -- phases, driven by _start_all so several clusters boot side by side -------------------

    def _require_layout(self) -> BrokerLayout:
        if self._layout is None:
            raise BrokerStartError(f"cluster {self.name!r} has not been started")
        return self._layout

    def _prepare(self, java: Path, classpath: str) -> None:
        self._workdir.make()
        (self.workdir / "data").mkdir(parents=True, exist_ok=True)
        (self.workdir / "log4j2.properties").write_text(LOG4J2, encoding="utf-8")
        self._layout_ports()
        self._command = [
            str(java),
            *self._jvm_options,
            f"-Dlog4j2.configurationFile={self.workdir / 'log4j2.properties'}",
            "-cp",
            classpath,
        ]

    def _layout_ports(self) -> None:
        layout = layout_broker(
            node_id=_NODE_ID,
            data_dir=self.workdir / "data",
            overrides=self._broker_config,
            pick_port=free_port,
        )
        for endpoint in layout.endpoints:
            if endpoint.port not in layout.picked_ports and not port_is_free(
                endpoint.host, endpoint.port
            ):
                raise BrokerStartError(
                    f"cluster {self.name!r}: port {endpoint.address} of listener "
                    f"{endpoint.name} is already in use; stop what holds it, or give port 0 "
                    "so the launcher picks a free one"
                )
        self._layout = layout
        properties = dict(layout.properties)
        if self._zookeeper:
            self._zookeeper_port = self._zookeeper_port or free_port()
            properties = zookeeper.zookeeper_properties(
                properties, layout.controller_listener, _NODE_ID, self._zookeeper_port
            )
            zk_data = self.workdir / "zookeeper"
            (self.workdir / "zoo.cfg").write_text(zookeeper.zoo_cfg(zk_data, self._zookeeper_port))
        text = render_properties(properties)
        (self.workdir / "server.properties").write_text(text, encoding="utf-8")

    def _needs_format(self) -> bool:
        return not self._zookeeper and not (self.workdir / "data" / "meta.properties").exists()

    def _spawn_format(self) -> subprocess.Popen[bytes]:
        command = [
            *self._command,
            "kafka.tools.StorageTool",
            "format",
            "--cluster-id",
            self.cluster_id,
            "--config",
            str(self.workdir / "server.properties"),
            *self._format_arguments,
        ]
        return process.spawn(command, log=self.log_path, cwd=self.workdir)

    def _check_format(self, formatter: subprocess.Popen[bytes]) -> None:
        try:
            code = formatter.wait(timeout=self._start_timeout)
        except subprocess.TimeoutExpired:
            process.terminate([formatter], grace=1)
            code = -1
        process.terminate([formatter], grace=0)
        if code != 0:
            raise self._failure(f"the storage format step failed (exit code {code})")

    def _launch(self) -> None:
        zk = self._zookeeper_process
        if self._zookeeper and (zk is None or zk.poll() is not None):
            java, *rest = self._command
            command = [java, *zookeeper.JVM_OPTIONS, *rest, zookeeper.MAIN]
            command.append(str(self.workdir / "zoo.cfg"))
            log_path = self.workdir / "zookeeper.log"
            zk = process.spawn(command, log=log_path, cwd=self.workdir)
            self._zookeeper_process = zk
            if not accepts(self._zookeeper_port, self._start_timeout, lambda: zk.poll() is None):
                raise self._failure(f"its ZooKeeper did not answer (log: {log_path})")
        command = [*self._command, "kafka.Kafka", str(self.workdir / "server.properties")]
        self._process = process.spawn(command, log=self.log_path, cwd=self.workdir)

    def _await_ready(self) -> None:
        for attempt in range(1, _ATTEMPTS + 1):
            started = self.log_path.stat().st_size if self.log_path.exists() else 0
            if self._wait_once():
                return
            bind_failed = (
                _BIND_FAILURE.search(process.read_from(self.log_path, started)) is not None
            )
            picked = bool(self._require_layout().picked_ports)
            if not (bind_failed and picked and attempt < _ATTEMPTS):
                reason = "a port was already in use" if bind_failed else "the broker exited"
                raise self._failure(f"{reason} during start (exit code {self._exit_code()})")
            self._layout_ports()  # someone took a picked port between pick and bind: new ports
            self._launch()

    def _wait_once(self) -> bool:
        proc = self._process
        if proc is None:
            return False
        try:
            ready = wait_until_ready(
                self.client_config(),
                timeout=self._start_timeout,
                keep_waiting=lambda: proc.poll() is None,
            )
        except KafkaClientError as exc:
            process.terminate([proc], grace=5)
            raise self._failure(f"no answer within {self._start_timeout:.0f}s ({exc})") from exc
        return ready is not None

    def _exit_code(self) -> int | None:
        return None if self._process is None else self._process.poll()

    def _failure(self, reason: str) -> BrokerStartError:
        tail = process.read_tail(self.log_path, 20) or "(empty)"
        return BrokerStartError(
            f"Kafka cluster {self.name!r}: {reason}. Log file: {self.log_path}\n"
            f"--- last lines of {self.log_path.name} ---\n{tail}"
        )

    def _reap(self) -> None:
        self._process = None
        self._workdir.remove()


def start_all(clusters: Sequence[LocalCluster]) -> None:
    """Boot the clusters side by side; on any failure stop every one of them."""
    if running := [c.name for c in clusters if c.running]:
        raise BrokerStartError(
            f"Kafka cluster {', '.join(running)} is running already (a second "
            "broker on its data directory would corrupt its metadata log)"
        )
    java = find_java().executable
    versions = {c.kafka_version for c in clusters}
    classpaths = {v: ":".join(str(j) for j in resolve_classpath(v)) for v in versions}
    try:
        for cluster in clusters:
            cluster._prepare(java, classpaths[cluster.kafka_version])
        formatting = [(c, c._spawn_format()) for c in clusters if c._needs_format()]
        for cluster, formatter in formatting:
            cluster._check_format(formatter)
        for cluster in clusters:
            cluster._launch()
        for cluster in clusters:
            cluster._await_ready()
    except BaseException:
        stop_all(clusters, keep_workdirs=True)  # the error names their log files
        raise


def stop_all(clusters: Sequence[LocalCluster], *, keep_workdirs: bool = False) -> None:
    process.terminate([c._process for c in clusters if c._process is not None])
    # after the brokers, which deregister from it as they stop
    process.terminate([c._zookeeper_process for c in clusters if c._zookeeper_process])
    for cluster in clusters:
        cluster._zookeeper_process = None
        if keep_workdirs:
            cluster._process = None
        else:
            cluster._reap()
