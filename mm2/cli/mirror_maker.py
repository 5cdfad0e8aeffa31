"""`connect-mirror-maker`: load mm2.properties, print it (--print-config) or start the runtime."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Sequence

from mm2.cli.shutdown import StopGuard
from mm2.cli.version import version_text
from mm2.config import MirrorMakerConfig, load
from mm2.errors import ConfigError
from mm2.log import configure

__all__ = ["build_parser", "main", "parse_args"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="connect-mirror-maker", description="MirrorMaker 2.0 driver"
    )
    parser.add_argument(
        "config", nargs="?", help="mm2.properties file, as Apache MirrorMaker 2 reads it"
    )
    parser.add_argument(
        "--clusters",
        nargs="+",
        metavar="CLUSTER",
        help="Target cluster to use for this node (before or after the file: "
        "`--clusters b mm2.properties` reads the last word as the file).",
    )
    parser.add_argument(
        "--print-config",
        action="store_true",
        help="print the resolved herders and connector configs as JSON and exit",
    )
    parser.add_argument(
        "--strict", action="store_true", help="fail on client settings librdkafka cannot honour"
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks and debug logs")
    logs = parser.add_mutually_exclusive_group()
    logs.add_argument(
        "--log-config",
        metavar="FILE",
        help="Python logging configuration: dictConfig as .json, .yaml or .yml, else fileConfig "
        "INI; it applies to mm2, librdkafka, Spark and the JVM alike",
    )
    logs.add_argument(
        "--log-file",
        metavar="FILE",
        help="write the log to FILE instead of standard error (reopened after logrotate moves it)",
    )
    parser.add_argument("--version", action="version", version=version_text(parser.prog))
    return parser


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Apache's usage is `mm2.properties [--clusters A B]`; `--clusters A B mm2.properties`
    also works: with no file before the option, its last word is the file."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.config is None:
        if not args.clusters or len(args.clusters) < 2:
            parser.error("the following arguments are required: config (the mm2.properties file)")
        args.config = args.clusters.pop()
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    # First: a SIGTERM while the file is read or Spark and the connectors are imported stops the
    # start at its next step, with exit 0, instead of killing the process.
    guard = StopGuard()
    guard.install()
    try:
        # --print-config's output is the JSON: only warnings beside it.
        quiet = logging.WARNING if args.print_config else logging.INFO
        configure(
            level=logging.DEBUG if args.debug else quiet,
            log_config=args.log_config,
            log_file=args.log_file,
        )
    except (ConfigError, OSError) as exc:
        if args.debug:
            raise
        print(f"connect-mirror-maker: error: {_log_error(args, exc)}", file=sys.stderr)
        return 2
    try:
        # --print-config may run on another host than the mirror: missing files only warn there.
        config = load(
            args.config,
            clusters=args.clusters,
            strict=args.strict,
            check_files=not args.print_config,
        )
        if not args.print_config:
            _check_rest(config)
    except ConfigError as exc:
        if args.debug:
            raise
        print(f"connect-mirror-maker: error: {exc}", file=sys.stderr)
        return 2
    from mm2.cli.client_features import require_client_features  # imports confluent_kafka

    try:  # a SASL mechanism (Kerberos) this confluent-kafka was built without
        require_client_features(config, warn_only=args.print_config)
    except ConfigError as exc:
        if args.debug:
            raise
        print(f"connect-mirror-maker: error: {exc}", file=sys.stderr)
        return 2
    if args.print_config:
        print(json.dumps(config.to_json(), indent=2, sort_keys=False))
        return 0
    # Imported here: --print-config and config errors need neither Spark nor the connectors.
    from mm2.cli import runtime_main

    if guard.stopping.is_set():
        return 0
    return runtime_main.run(config, args, guard)


def _log_error(args: argparse.Namespace, exc: Exception) -> str:
    if isinstance(exc, OSError):
        return f"--log-file {args.log_file}: {exc.strerror or exc}"
    return f"--log-config {exc}"


def _check_rest(config: MirrorMakerConfig) -> None:
    """The REST server's settings as the server will read them: config providers resolved
    first (`listeners = http://0.0.0.0:${env:PORT}`), its JAAS and users files included, with
    the file and line of the key at fault."""
    from mm2.config.providers import Providers
    from mm2.runtime.rest_config import rest_config

    try:
        rest_config(Providers.from_settings(config.raw).resolve_all(config.raw), os.environ)
    except ConfigError as exc:
        raise config.error(exc) from None


if __name__ == "__main__":
    sys.exit(main())
