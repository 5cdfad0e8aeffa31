"""Runs the worker for a loaded mm2.properties until SIGINT or SIGTERM."""

from __future__ import annotations

import argparse
import logging
import signal
import threading
from types import FrameType

from connectors.heartbeat import MirrorHeartbeatConnector
from connectors.source import MirrorSourceConnector
from mm2.config.model import MirrorMakerConfig
from mm2.connect.spi import Connector
from mm2.pipeline.query import stop_spark
from mm2.runtime.worker import Worker

__all__ = ["PLUGINS", "build_worker", "run"]

log = logging.getLogger("mm2")

PLUGINS: dict[str, type[Connector]] = {
    cls.__name__: cls for cls in (MirrorSourceConnector, MirrorHeartbeatConnector)
}


def build_worker(config: MirrorMakerConfig) -> Worker:
    """One herder per flow, each with the connectors this build has a plugin for."""
    flows: dict[str, dict[str, dict[str, str]]] = {}
    for flow in config.flows:
        connectors = {}
        for name in flow.connectors:
            if name not in PLUGINS:
                log.warning("%s: %s is not available in this build yet", flow.name, name)
                continue
            connectors[name] = flow.connector_config(name)
        flows[flow.name] = connectors
    return Worker(flows, PLUGINS)


def run(config: MirrorMakerConfig, args: argparse.Namespace) -> int:
    """Start every herder, wait for a stop signal, stop them all; exit code 0 on a clean stop."""
    logging.getLogger().setLevel(logging.DEBUG if args.debug else logging.INFO)
    for warning in config.warnings:
        log.warning("%s", warning)
    stopping = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        log.info("received %s, stopping", signal.Signals(signum).name)
        stopping.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    worker = build_worker(config)
    enabled = ", ".join(f.name for f in config.enabled_flows) or "none"
    log.info("starting %d herder(s); replication enabled for: %s", len(worker.herders), enabled)
    worker.start()
    try:
        stopping.wait()
    finally:
        worker.stop()
        stop_spark()
    log.info("stopped cleanly")
    return 0
