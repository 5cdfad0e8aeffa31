"""Runs the worker and its REST server for a loaded mm2.properties until SIGINT or SIGTERM."""

from __future__ import annotations

import argparse
import functools
import logging
import os
import socket
import threading
import time
from collections.abc import Mapping
from pathlib import Path

from mm2.api.app import create_app
from mm2.api.server import RestServer
from mm2.cli.coordination import build_coordinator, secret_box
from mm2.cli.shutdown import StopGuard
from mm2.cli.version import version_text
from mm2.client.lag import LagReader
from mm2.config.model import CHECKPOINT, Flow, MirrorMakerConfig
from mm2.config.providers import Providers
from mm2.connect.spi import Connector
from mm2.connectors.checkpoint import MirrorCheckpointConnector, load_snapshot, snapshot_path
from mm2.connectors.heartbeat import MirrorHeartbeatConnector
from mm2.connectors.schema import MirrorSchemaConnector
from mm2.connectors.source import MirrorSourceConnector, spark_conf
from mm2.copy.positions import PositionsTopic
from mm2.errors import ConfigError
from mm2.log.wire import demote_spark_records
from mm2.pipeline.session import spark_context, stop_spark
from mm2.runtime.changes import ChangeStore
from mm2.runtime.liveness import Liveness
from mm2.runtime.metrics import MetricsRegistry
from mm2.runtime.mirror_maker import MirrorMaker
from mm2.runtime.offsets import MirrorSourceOffsets
from mm2.runtime.rest_config import rest_config
from mm2.runtime.secrets import SealedChanges
from mm2.runtime.standby import Coordinator

__all__ = ["PLUGINS", "build_mirror", "change_store", "check_state_files", "run"]

log = logging.getLogger("mm2")

PLUGINS: dict[str, type[Connector]] = {
    cls.__name__: cls
    for cls in (
        MirrorSourceConnector,
        MirrorCheckpointConnector,
        MirrorHeartbeatConnector,
        MirrorSchemaConnector,
    )
}


def _positions(config: Mapping[str, str]) -> PositionsTopic:
    return PositionsTopic.of(Flow.for_connector(config))


def change_store(config: MirrorMakerConfig) -> ChangeStore:
    """The copy of the REST changes under mm2.state.dir, read now: a damaged one (or a state
    dir that is a file) raises a StateFileError naming it."""
    state = Path(config.settings.mm2_state_dir)
    return ChangeStore(state / "rest-changes.json", codec=SealedChanges(secret_box(config)))


def check_state_files(config: MirrorMakerConfig) -> None:
    """The checkpoint tasks' saved state, read once before anything starts: a damaged file
    stops the start (StateFileError naming it) rather than failing a task later."""
    for flow in config.enabled_flows:
        load_snapshot(snapshot_path(flow.connector_config(CHECKPOINT)))


def build_mirror(
    config: MirrorMakerConfig,
    coordinator: Coordinator | None = None,
    store: ChangeStore | None = None,
    stopping: threading.Event | None = None,
    worker_id: str | None = None,
) -> MirrorMaker:
    """The worker for the file plus the changes made over REST: those kept in Kafka when a
    coordinator has read them, else the copy under mm2.state.dir.

    The process's one MetricsRegistry and Liveness are made here: the mirror hands them to
    its tasks (through their TaskContext) and lag monitors, and the REST API reads them from
    the mirror (RuntimeView.metrics, .liveness)."""
    store = store if store is not None else change_store(config)
    if coordinator is not None:
        began = time.monotonic()
        log.info("reading the REST changes kept on %s (up to 30 s) ...", coordinator.home)
        stored = coordinator.initial_changes(timeout=30.0, stopping=stopping)
        log.info("REST changes read in %.1f s", time.monotonic() - began)
        if stored is not None:
            store.replace(stored)
    return MirrorMaker(
        config,
        PLUGINS,
        store,
        offsets={MirrorSourceConnector.__name__: MirrorSourceOffsets(_positions)},
        coordinator=coordinator,
        worker_id=worker_id,
        lag=functools.partial(LagReader, record_ends=True),
        metrics=MetricsRegistry(),
        liveness=Liveness(),
    )


def start_spark_early(config: MirrorMakerConfig) -> None:
    """Begin making the Spark session (several seconds) while the REST changes are read and
    the REST server and the herders start; the first MirrorSource task then finds it ready,
    or waits for it."""
    flows = config.enabled_flows
    if not flows:
        return
    conf = spark_conf(flows[0].connector_config())

    def start() -> None:
        try:
            spark_context(conf)
        except Exception as exc:  # noqa: BLE001 - the task tries again and reports the error
            log.debug("early Spark start failed: %s", exc)

    threading.Thread(target=start, name="spark-start", daemon=True).start()


def run(config: MirrorMakerConfig, args: argparse.Namespace, guard: StopGuard | None = None) -> int:
    """Start the REST server and every herder, wait for a stop signal, stop them all.

    `guard` is installed as early as the command can (mirror_maker.main): a stop asked while
    starting ends the start at the next step. Exit code 0 on a clean stop, 2 when the REST
    settings or stored changes are broken.
    """
    started = time.monotonic()
    enabled = ", ".join(f.name for f in config.enabled_flows) or "none"
    log.info("%s starting; flows enabled: %s", version_text("connect-mirror-maker"), enabled)
    if guard is None:
        guard = StopGuard()
        guard.install()
    stopping = guard.stopping  # set by the first signal
    try:
        # Apache resolves the worker's own settings (keystores, JAAS file) with its providers.
        rest = rest_config(Providers.from_settings(config.raw).resolve_all(config.raw), os.environ)
        store = change_store(config)
        check_state_files(config)
        coordinator = build_coordinator(config, worker_id=rest.worker_id())
        if coordinator is not None:
            for flow in config.flows:
                coordinator.watch(flow)
        # Spark's JVM starts while the REST changes are read (a second or more): the settings
        # are valid by now, and a JVM started for nothing ends with this process.
        start_spark_early(config)
        mirror = build_mirror(config, coordinator, store, stopping, rest.worker_id())
    except (ConfigError, ValueError) as exc:
        log.error("%s", exc)
        return 2
    if stopping.is_set():  # asked to stop while starting: nothing was started for the flows
        if coordinator is not None:
            coordinator.stop()
        stop_spark()
        log.info("stopped while starting")
        return 0
    server = RestServer(create_app(mirror, credentials=rest.credentials), rest)
    try:
        for url in server.start():
            log.info("REST API listening on %s (OpenAPI document at %s/openapi.json)", url, url)
    except OSError as exc:
        # Mirroring matters more than the API: keep copying, say clearly what is missing.
        log.error("REST API not started (%s); set listeners = http://host:port to fix", exc)
    if coordinator is not None:
        coordinator.url = (
            server.urls[0] if server.urls else f"no-rest-api:{socket.gethostname()}:{os.getpid()}"
        )
    log.info(
        "starting %d herder(s); replication enabled for: %s", len(mirror.worker.herders), enabled
    )
    mirror.start()
    if coordinator is not None:
        coordinator.start_elections()
    log.info("started in %.1f s", time.monotonic() - started)
    try:
        guard.wait()
    finally:
        demote_spark_records()  # Spark's cancelled tasks are no news while the mirror stops
        server.stop()
        mirror.stop()
        stop_spark()
    log.info("stopped cleanly")
    return 0
