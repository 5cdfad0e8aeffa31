"""The `mm2` command: operator tools, one subcommand per module in `mm2.cli`."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence
from typing import Protocol

from mm2.cli.version import version_text
from mm2.errors import MM2Error
from mm2.log import configure


class Subcommand(Protocol):
    """What a tool module offers: a name, a parser and a runner returning an exit code."""

    NAME: str
    HELP: str

    def add_arguments(self, parser: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace) -> int: ...


def _subcommands() -> list[Subcommand]:
    # Imported here so `mm2 --help` stays fast and a broken tool does not break the others.
    from mm2.cli import kafka_mirror_maker, local_cluster, offset_tools, status, switchover

    return [
        local_cluster,
        *offset_tools.COMMANDS,
        *switchover.COMMANDS,
        *status.COMMANDS,
        *kafka_mirror_maker.COMMANDS,
    ]


def build_parser(commands: Sequence[Subcommand]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mm2", description="MirrorMaker 2 operator tools")
    parser.add_argument("--version", action="version", version=version_text("mm2"))
    parser.add_argument("--debug", action="store_true", help="show tracebacks and debug logs")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in commands:
        p = sub.add_parser(command.NAME, help=command.HELP, description=command.HELP)
        command.add_arguments(p)
        p.set_defaults(_run=command.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser(_subcommands())
    args = parser.parse_args(argv)
    configure(level=logging.DEBUG if args.debug else logging.INFO)
    run: Callable[[argparse.Namespace], int] = args._run
    try:
        return run(args)
    except MM2Error as exc:
        if args.debug:
            raise
        print(f"mm2 {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
