"""`mm2 switchover`: a planned switchover of a flow, through the running mirror's REST API.

Kafka is read directly with the file's settings (lag, offset syncs, groups), and so are the
Schema Registries of a flow that names them (the target's put in READWRITE); the flows are
paused and resumed over the mirror's REST API (`--url`), so the mirror that runs them does it.
Exit status 1 when a step stopped the switchover or failed (the registries' step fails
without stopping the others).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import httpx

from mm2.api.client_headers import CHANGE_HEADERS
from mm2.cli.offset_tools import add_switches, add_timeout, table
from mm2.client.switchover import switchover
from mm2.client.switchover_report import SwitchoverError, SwitchoverReport
from mm2.config import load
from mm2.errors import ConfigError, MM2Error

__all__ = ["COMMANDS", "RestFlows", "render_report"]


class RestFlows:
    """FlowControl over a running mirror's REST API."""

    def __init__(self, url: str, user: str | None = None) -> None:
        auth = tuple(user.split(":", 1)) if user and ":" in user else None
        self._api = httpx.Client(
            base_url=url.rstrip("/"),
            timeout=30,
            auth=auth,  # type: ignore[arg-type]
            headers=CHANGE_HEADERS,
        )

    def state(self, source: str, target: str) -> str | None:
        answer = self._call("GET", f"/flows/{source}/{target}", ok=(200, 404))
        if answer.status_code == 404:
            return None
        body: dict[str, Any] = answer.json()
        return str(body.get("state"))

    def pause(self, source: str, target: str) -> None:
        self._call("PUT", f"/flows/{source}/{target}/pause", ok=(202,))

    def resume(self, source: str, target: str) -> None:
        self._call("PUT", f"/flows/{source}/{target}/resume", ok=(202,))

    def _call(self, method: str, path: str, *, ok: tuple[int, ...]) -> httpx.Response:
        try:
            answer = self._api.request(method, path)
        except httpx.HTTPError as exc:
            raise MM2Error(f"the mirror's REST API did not answer {method} {path}: {exc}") from None
        if answer.status_code not in ok:
            raise MM2Error(f"{method} {path}: {answer.status_code} {answer.text[:300]}")
        return answer

    def close(self) -> None:
        self._api.close()


def render_report(report: SwitchoverReport) -> str:
    rows = [
        [
            f"{p.topic}-{p.partition}",
            str(p.log_end),
            "-" if p.position is None else str(p.position),
            str(p.records),
            f"{p.seconds:.1f}",
        ]
        for p in report.partitions
    ]
    header = ["SOURCE PARTITION", "SOURCE END", "COPIED TO", "NOT COPIED", "SECONDS"]
    steps = [[s.name, f"{s.seconds:.1f} s", "FAILED" if s.failed else "ok"] for s in report.steps]
    groups = [
        [
            g.group,
            g.committed_as,
            str(g.committed),
            str(g.kept),
            "yes" if g.exact else "no",
            g.skipped or "-",
        ]
        for g in report.groups
    ]
    failed = ", ".join(report.failed_steps)
    out = [
        f"switchover of {report.flow}"
        + (" (dry run)" if report.dry_run else "")
        + (": done" if report.done else "")
        + (f": failed at {failed} (see what it said)" if failed else ""),
        "",
        table(header, rows) if rows else "no partition mirrored",
        "",
        f"recovery point: {report.not_copied} record(s) not copied, the oldest "
        f"{report.not_copied_seconds:.1f} s old",
    ]
    if groups:
        head = ["GROUP", "ON TARGET AS", "COMMITTED", "KEPT", "EXACT", "SKIPPED"]
        out += ["", table(head, groups)]
    out += ["", table(["STEP", "TOOK", "RESULT"], steps)]
    return "\n".join(out)


class Switchover:
    NAME = "switchover"
    HELP = "planned switchover of a flow: drain, move every group, pause it, start the way back"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--config", required=True, metavar="FILE", help="mm2.properties")
        parser.add_argument(
            "--from",
            required=True,
            dest="source",
            metavar="ALIAS",
            help="the cluster the clients leave",
        )
        parser.add_argument(
            "--to", required=True, dest="target", metavar="ALIAS", help="the cluster they move to"
        )
        parser.add_argument(
            "--url", required=True, help="the running mirror's REST URL (http://host:8083)"
        )
        parser.add_argument("--user", metavar="USER:PASSWORD", help="REST Basic credentials")
        add_switches(
            parser,
            ("--dry-run", "check and show lag and group plans; change nothing"),
            ("--start-reverse", "resume the flow TO->FROM once this one is paused"),
        )
        parser.add_argument(
            "--drain-timeout",
            type=float,
            default=300.0,
            metavar="SECONDS",
            help="how long to wait for lag 0 (default 300)",
        )
        add_timeout(parser)
        parser.add_argument("--json", action="store_true", help="print the report as JSON")

    def run(self, args: argparse.Namespace) -> int:
        config = load(args.config)
        try:
            flow = config.flow(args.source, args.target)
        except KeyError:
            raise ConfigError(
                f"no flow {args.source}->{args.target} in the file", file=config.path
            ) from None
        try:
            reverse = config.flow(args.target, args.source)
        except KeyError:
            reverse = None
        control = RestFlows(args.url, args.user)
        # Progress goes to standard error, so that --json prints one document on stdout.
        say = (lambda line: print(line, file=sys.stderr, flush=True)) if args.json else print
        code = 0
        try:
            report = switchover(
                flow,
                control,
                reverse_flow=reverse,
                dry_run=args.dry_run,
                start_reverse=args.start_reverse,
                drain_timeout=args.drain_timeout,
                timeout=args.timeout,
                say=say,
            )
        except SwitchoverError as exc:
            report, code = exc.report, 1
        finally:
            control.close()
        if report.failed_steps:
            code = 1  # the registries' step fails without stopping the others
        print(json.dumps(report.to_json(), indent=2) if args.json else "\n" + render_report(report))
        return code


COMMANDS = (Switchover(),)
