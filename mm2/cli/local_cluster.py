"""`mm2 local-cluster`: fetch the Kafka jars, or run named local Kafka clusters until stopped."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
from types import FrameType

from mm2.errors import ConfigError
from mm2.localcluster import KAFKA_VERSION, LocalClusters, resolve_classpath

NAME = "local-cluster"
HELP = "run real Apache Kafka clusters on loopback (for tests, demos and benchmarks)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    fetch = actions.add_parser("fetch", help="resolve the Kafka jars from Maven Central")
    fetch.add_argument("--kafka-version", default=KAFKA_VERSION)
    start = actions.add_parser("start", help="start named clusters and run until Ctrl-C/SIGTERM")
    start.add_argument("names", nargs="+", metavar="NAME", help="e.g. primary backup")
    start.add_argument("--workdir", help="keep cluster data here (default: temp dirs, removed)")
    start.add_argument(
        "--broker-config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a broker property for every cluster (repeatable)",
    )
    start.add_argument("--kafka-version", default=KAFKA_VERSION)
    start.add_argument("--json", action="store_true", help="print one JSON object instead")


def _broker_config(pairs: list[str]) -> dict[str, str]:
    config: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"{pair!r} is not KEY=VALUE", key="--broker-config")
        config[key.strip()] = value
    return config


def _fetch(args: argparse.Namespace) -> int:
    jars = resolve_classpath(args.kafka_version)
    print(f"Apache Kafka {args.kafka_version}: {len(jars)} jars, resolved from Maven Central")
    for jar in jars:
        print(f"  {jar}")
    return 0


def _start(args: argparse.Namespace) -> int:
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    # SIGINT too: a shell starts background jobs with SIGINT ignored, which Python would keep.
    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    clusters = LocalClusters(
        args.names,
        workdir=args.workdir,
        broker_config=_broker_config(args.broker_config),
        kafka_version=args.kafka_version,
    )
    try:
        with clusters:
            addresses = {c.name: c.bootstrap_servers for c in clusters}
            if args.json:
                pids = {c.name: c.pid for c in clusters}
                print(json.dumps({"clusters": addresses, "pids": pids, "pid": os.getpid()}))
            else:
                for name, address in addresses.items():
                    print(f"{name}={address}")
            sys.stdout.flush()
            while not stop.wait(0.5):
                pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0


def run(args: argparse.Namespace) -> int:
    if args.action == "fetch":
        return _fetch(args)
    return _start(args)
