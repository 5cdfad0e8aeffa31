"""`kafka-mirror-maker` (MirrorMaker 1's command line) and `mm2 migrate-mm1` (the same flags,
printed as mm2.properties).

`kafka-mirror-maker` turns the flags and client files into one flow (mm2.config.mm1), writes it
as `<mm2.state.dir>/kafka-mirror-maker.properties` and runs it as `connect-mirror-maker` would.
Options MirrorMaker 1 took that cannot be honoured are refused, each saying why; the flags of old
versions that only tuned MM1's own threads and queues are accepted with a warning.
"""

from __future__ import annotations

import argparse
import difflib
import logging
import os
import re
import shlex
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from mm2.config import load_properties, parse_properties
from mm2.config.mm1 import Migration, MirrorMaker1Options, command_line, migrate
from mm2.config.settings import mirror_maker_settings
from mm2.errors import ConfigError

__all__ = [
    "COMMANDS",
    "MigrateMm1",
    "add_mm1_arguments",
    "build_parser",
    "checked",
    "command",
    "main",
    "options_from",
]

PROG = "kafka-mirror-maker"
GENERATED = "kafka-mirror-maker.properties"
JAAS_PROPERTY = "java.security.auth.login.config"

# MirrorMaker 1 options that mm2 cannot honour, and why.
_REFUSED = {
    "--message.handler": "it runs a Java MirrorMakerMessageHandler on every record; mm2 copies "
    "records unchanged and runs no Java. Transform them before the mirror or after it (a "
    "Kafka Streams application, say), or keep MirrorMaker 1 for this flow",
    "--message.handler.args": "it is the argument of --message.handler, which mm2 cannot run",
    "--consumer.rebalance.listener": "it runs a Java ConsumerRebalanceListener; mm2's copy tasks "
    "are assigned their partitions and join no group, so there is no rebalance to listen to",
    "--rebalance.listener.args": "it is the argument of --consumer.rebalance.listener, which "
    "mm2 cannot run",
}
# Options of MirrorMaker 1 before Kafka 2.0 that sized its own threads and queues.
_NO_EFFECT = {
    "--num.producers": "mm2 runs one producer per copy task (--num.streams)",
    "--queue.size": "records go from consumer to producer without a queue between them",
    "--queue.byte.size": "records go from consumer to producer without a queue between them",
}
# Spellings seen in MirrorMaker 1 guides that MM1 itself never accepted.
_MISSPELT = {
    "--abortOnSendFail": "--abort.on.send.failure",
    "--white-list": "--whitelist",
    "--black-list": "--blacklist",
}


class _Refuse(argparse.Action):
    """An option that is refused as soon as it is seen, with the reason."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        self.reason: str = kwargs.pop("reason")
        super().__init__(option_strings, dest, **kwargs)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        parser.error(f"{option_string}: {self.reason}")


def _at_least(low: int) -> Any:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"{value} is less than {low}")
        return value

    return parse


def _setting(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"{text!r} is not KEY=VALUE")
    return key.strip(), value.strip()


def add_mm1_arguments(parser: argparse.ArgumentParser) -> None:
    """MirrorMaker 1's flags (Kafka 0.8 to 3.x), plus mm2's `--set`."""
    a = parser.add_argument
    a(
        "--consumer.config",
        dest="consumer_config",
        required=True,
        metavar="FILE",
        help="consumer settings for the source cluster: bootstrap.servers, group.id (the mirror's "
        "name; its progress is committed there), security and tuning",
    )
    a(
        "--producer.config",
        dest="producer_config",
        required=True,
        metavar="FILE",
        help="producer settings for the target cluster: bootstrap.servers, security and tuning",
    )
    a(
        "--include",
        metavar="REGEX",
        help="topics to mirror, a Java regex ('.*' for all; a comma means '|')",
    )
    a("--whitelist", metavar="REGEX", help="older name of --include (ignored with --include)")
    a("--blacklist", metavar="REGEX", help="topics not to mirror (MirrorMaker 1 before Kafka 2.0)")
    a(
        "--num.streams",
        dest="num_streams",
        type=_at_least(1),
        default=1,
        metavar="N",
        help="copy tasks at most (mm2's tasks.max; default 1)",
    )
    a(
        "--abort.on.send.failure",
        "--abort.on.send.fail",
        dest="abort",
        nargs="?",
        const="true",
        default="true",
        metavar="true|false",
        help="true (the default): a record the target refuses stops the copy task; false: records "
        "too large for the target are skipped and counted",
    )
    a(
        "--offset.commit.interval.ms",
        dest="commit_interval_ms",
        type=_at_least(0),
        default=60_000,
        metavar="MS",
        help="how often the group's offsets on the source follow the mirror (default 60000)",
    )
    a(
        "--new.consumer",
        action="store_true",
        help="accepted: brokers are always read directly, as by MirrorMaker 1 since Kafka 2.0",
    )
    a(
        "--set",
        dest="settings",
        action="append",
        type=_setting,
        default=[],
        metavar="KEY=VALUE",
        help="an mm2.properties setting for the flow, e.g. "
        "emit.checkpoints.enabled=true or listeners=http://:8083 (repeatable; mm2's addition)",
    )
    for name, why in _NO_EFFECT.items():
        a(
            name,
            dest=name.lstrip("-").replace(".", "_"),
            metavar="N",
            help=f"accepted and ignored: {why}",
        )
    for name, why in _REFUSED.items():
        a(
            name,
            action=_Refuse,
            reason=f"refused: {why}",
            metavar="ARG",
            help="refused: " + why.split(";")[0],
        )
    for name, right in _MISSPELT.items():
        a(
            name,
            action=_Refuse,
            reason=f"not a MirrorMaker option; did you mean {right}?",
            nargs="?",
            help=argparse.SUPPRESS,
        )


def options_from(args: argparse.Namespace) -> MirrorMaker1Options:
    """The parsed flags as MirrorMaker1Options; ConfigError names a flag MM1 would refuse too."""
    if args.include is None and args.whitelist is None and args.blacklist is None:
        raise ConfigError(
            "--include (or --whitelist) is required: the topics to mirror, a Java regex such "
            "as '.*' or 'orders|payments'",
            key="--include",
        )
    abort = str(args.abort).strip().lower()
    if abort not in ("true", "false"):
        raise ConfigError(f"{args.abort!r} is not true or false", key="--abort.on.send.failure")
    return MirrorMaker1Options(
        consumer_config=args.consumer_config,
        producer_config=args.producer_config,
        include=args.include if args.include is not None else args.whitelist,
        exclude=args.blacklist,
        num_streams=args.num_streams,
        abort_on_send_failure=abort == "true",
        offset_commit_interval_ms=args.commit_interval_ms,
        overrides=tuple(args.settings),
        command=command(args),
        jaas_file=jaas_file(os.environ.get("KAFKA_OPTS", "")),
    )


def jaas_file(kafka_opts: str) -> str | None:
    """-Djava.security.auth.login.config in KAFKA_OPTS, where MirrorMaker 1 users give it."""
    for word in shlex.split(kafka_opts):
        if word.startswith(f"-D{JAAS_PROPERTY}="):
            return word.split("=", 1)[1]
    return None


def command(args: argparse.Namespace) -> str:
    """The command line the options mean, for the written file's header."""
    words = ["--consumer.config", args.consumer_config, "--producer.config", args.producer_config]
    for flag, value in (
        ("--include", args.include),
        ("--whitelist", args.whitelist),
        ("--blacklist", args.blacklist),
    ):
        if value is not None:
            words += [flag, value]
    words += ["--num.streams", str(args.num_streams), "--abort.on.send.failure", str(args.abort)]
    words += ["--offset.commit.interval.ms", str(args.commit_interval_ms)]
    for key, value in args.settings:
        words += ["--set", f"{key}={value}"]
    return command_line(PROG, words)


def flag_warnings(args: argparse.Namespace) -> list[str]:
    found = []
    if args.include is not None and args.whitelist is not None:
        found.append("--whitelist is ignored: --include is given (as MirrorMaker 1 does)")
    for name, why in _NO_EFFECT.items():
        if getattr(args, name.lstrip("-").replace(".", "_")) is not None:
            found.append(f"{name} has no effect: {why}")
    return found


def checked(migration: Migration, path: str) -> Migration:
    """Load the written file as connect-mirror-maker will (files on this host not read yet);
    a problem is reported at the flag or client file line it came from."""
    try:
        load_properties(parse_properties(migration.text(), path), check_files=False)
    except ConfigError as exc:
        raise migration.error(exc) from None
    return migration


def _version() -> str:
    try:
        return f"{PROG} (mm2 {version('mm2')})"
    except PackageNotFoundError:
        return PROG


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Continuously copy topics from one Kafka cluster to another, with "
        "MirrorMaker 1's command line (run by mm2 as one mirror flow).",
    )
    add_mm1_arguments(parser)
    parser.add_argument("--debug", action="store_true", help="show tracebacks and debug logs")
    parser.add_argument("--version", action="version", version=_version())
    return parser


def _parse(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """parse_args, with a did-you-mean for an option MirrorMaker 1 does not have either."""
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        word = unknown[0]
        if not word.startswith("-"):
            parser.error(f"unexpected argument {word!r} (every option takes the form --name)")
        known = [s for action in parser._actions for s in action.option_strings]
        # --abortOnSendFail -> --abort.on.send.fail: camelCase spellings of dotted options
        dotted = "--" + re.sub(r"(?<=[a-z])([A-Z])", r".\1", word.lstrip("-")).lower()
        close = difflib.get_close_matches(dotted.split("=")[0], known, n=1, cutoff=0.7)
        hint = f"; did you mean {close[0]}?" if close else f"; {PROG} --help lists them"
        parser.error(f"{word} is not a MirrorMaker option{hint}")
    return args


def _write(migration: Migration) -> Path:
    """The flow's file in its state directory, readable by its owner only (it may name secret
    files and users)."""
    state = Path(mirror_maker_settings(migration.values()).mm2_state_dir)
    state.mkdir(parents=True, exist_ok=True)
    path = state / GENERATED
    temporary = path.with_name(f".{GENERATED}.{os.getpid()}")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as out:
        out.write(migration.text())
    temporary.replace(path)
    return path


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = _parse(parser, argv)
    try:
        migration = migrate(options_from(args))
        # The loader's warnings are logged once, by the run below.
        logging.disable(logging.WARNING)
        try:
            checked(migration, GENERATED)
        finally:
            logging.disable(logging.NOTSET)
        path = _write(migration)
    except ConfigError as exc:
        if args.debug:
            raise
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        if args.debug:
            raise
        print(f"{PROG}: error: cannot write the flow's file: {exc}", file=sys.stderr)
        return 2
    for warning in flag_warnings(args) + list(migration.warnings):
        print(f"{PROG}: warning: {warning}", file=sys.stderr)
    print(
        f"{PROG}: mirroring {migration.source} -> {migration.target} as {path} "
        "(mm2 migrate-mm1 prints it)",
        file=sys.stderr,
    )
    # Imported here: the flags and files above are checked without Spark or the connectors.
    from mm2.cli import mirror_maker

    return mirror_maker.main([str(path), *(["--debug"] if args.debug else [])])


class MigrateMm1:
    """`mm2 migrate-mm1 <kafka-mirror-maker flags>`: the mm2.properties that runs the same."""

    NAME = "migrate-mm1"
    HELP = "print the mm2.properties equivalent to a MirrorMaker 1 (kafka-mirror-maker) command"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_mm1_arguments(parser)

    def run(self, args: argparse.Namespace) -> int:
        migration = checked(migrate(options_from(args)), "<mm2 migrate-mm1>")
        for warning in flag_warnings(args) + list(migration.warnings):
            print(f"mm2 migrate-mm1: warning: {warning}", file=sys.stderr)
        print(migration.text(), end="")
        return 0


COMMANDS = (MigrateMm1(),)


if __name__ == "__main__":
    sys.exit(main())
