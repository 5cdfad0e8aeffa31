"""`mm2 status` and `mm2 lag`: the Consumer Offset Checker's table, for flows and for groups.

`mm2 status` shows per flow, topic and partition the source's log end, the position copied,
the lag in records and seconds, the copy task that owns it and the flow's state: from a
running mirror's REST API (`--url`), or straight from Kafka with mm2.properties (owner and
state are then unknown). `mm2 lag --group G` shows the group's committed offset, log size and
lag on the source, and where it would resume on the target with the lag there.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import httpx

from mm2.cli.offset_tools import table
from mm2.client.failover import DEFAULT_TIMEOUT, plan_failover
from mm2.client.lag import LagReader
from mm2.config import Flow, MirrorMakerConfig, load
from mm2.errors import ConfigError, MM2Error
from mm2.kafka.offsets import OffsetLister

__all__ = ["COMMANDS", "Lag", "Status"]

STATUS_HEADER = [
    "FLOW",
    "TOPIC",
    "PARTITION",
    "LOG-END",
    "COPIED",
    "LAG",
    "LAG-S",
    "OWNER",
    "STATE",
]
LAG_HEADER = [
    "GROUP",
    "FLOW",
    "TOPIC",
    "PARTITION",
    "OFFSET",
    "LOG-SIZE",
    "LAG",
    "TARGET-TOPIC",
    "TARGET-OFFSET",
    "TARGET-LOG-SIZE",
    "TARGET-LAG",
]


def _flows(config: MirrorMakerConfig, only: str | None) -> list[Flow]:
    flows = [f for f in config.enabled_flows if only in (None, f.name)]
    if not flows:
        names = ", ".join(f.name for f in config.enabled_flows) or "none"
        raise ConfigError(f"no enabled flow {only or ''} (enabled: {names})", file=config.path)
    return flows


def _cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.1f}"
    return str(value)


def _watch(args: argparse.Namespace, once: Callable[[], str]) -> int:
    if not args.watch:
        print(once())
        return 0
    while True:
        text = once()
        if sys.stdout.isatty():
            print("\033[2J\033[H", end="")
        print(f"{time.strftime('%H:%M:%S')}  (every {args.watch:g} s, Ctrl-C to stop)")
        print(text, flush=True)
        time.sleep(args.watch)


class _FromKafka:
    """Rows read from Kafka with mm2.properties; the readers are kept between refreshes."""

    def __init__(self, flows: Sequence[Flow]) -> None:
        self._readers = [LagReader(f) for f in flows]

    def rows(self) -> tuple[list[dict[str, Any]], list[str]]:
        rows, problems = [], []
        for reader in self._readers:
            report = reader.read()
            problems += [f"{report.flow}: {p}" for p in report.problems]
            for p in report.partitions:
                rows.append(
                    {
                        "flow": report.flow,
                        "topic": p.topic,
                        "partition": p.partition,
                        "log_end": p.log_end,
                        "position": p.position,
                        "lag_records": p.records,
                        "lag_seconds": round(p.seconds, 3),
                        "owner": None,
                        "state": None,
                    }
                )
        return rows, problems


class _FromRest:
    """Rows from a running mirror's REST API."""

    def __init__(self, url: str, user: str | None, only: str | None) -> None:
        auth = tuple(user.split(":", 1)) if user and ":" in user else None
        self._api = httpx.Client(base_url=url.rstrip("/"), timeout=30, auth=auth)  # type: ignore[arg-type]
        self._only = only

    def rows(self) -> tuple[list[dict[str, Any]], list[str]]:
        rows, problems = [], []
        try:
            flows = self._get("/flows")
            for flow in flows:
                name = f"{flow['source']}->{flow['target']}"
                if not flow["enabled"] or self._only not in (None, name):
                    continue
                if flow.get("cause"):
                    problems.append(f"{name}: {flow['state']}: {flow['cause']}")
                for row in self._get(f"/flows/{flow['source']}/{flow['target']}/partitions"):
                    rows.append({"flow": name, **row})
        except httpx.HTTPError as exc:
            raise MM2Error(f"the mirror's REST API did not answer: {exc}") from None
        return rows, problems

    def _get(self, path: str) -> Any:
        answer = self._api.get(path)
        if answer.status_code != 200:
            raise MM2Error(f"GET {path}: {answer.status_code} {answer.text[:200]}")
        return answer.json()


def render_status(rows: Sequence[dict[str, Any]], problems: Sequence[str]) -> str:
    body = [
        [
            r["flow"],
            r["topic"],
            str(r["partition"]),
            _cell(r["log_end"]),
            _cell(r["position"]),
            _cell(r["lag_records"]),
            _cell(r["lag_seconds"]),
            _cell(r.get("owner")),
            _cell(r.get("state")),
        ]
        for r in sorted(rows, key=lambda r: (r["flow"], r["topic"], r["partition"]))
    ]
    lines = [table(STATUS_HEADER, body)] if body else ["no partition mirrored (yet)"]
    lines += [f"! {p}" for p in problems]
    return "\n".join(lines)


class Status:
    NAME = "status"
    HELP = "per flow, topic and partition: log end, copied position, lag, owner task, state"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "config", nargs="?", metavar="FILE", help="mm2.properties (read Kafka directly)"
        )
        parser.add_argument("--url", help="a running mirror's REST URL, e.g. http://host:8083")
        parser.add_argument("--user", metavar="USER:PASSWORD", help="REST Basic credentials")
        parser.add_argument("--flow", metavar="SOURCE->TARGET", help="one flow only")
        parser.add_argument("--json", action="store_true", help="print JSON rows")
        parser.add_argument("--watch", type=float, metavar="SECONDS", help="refresh forever")

    def run(self, args: argparse.Namespace) -> int:
        if bool(args.config) == bool(args.url):
            raise ConfigError("give either mm2.properties or --url (not both)")
        source: _FromKafka | _FromRest
        if args.url:
            source = _FromRest(args.url, args.user, args.flow)
        else:
            source = _FromKafka(_flows(load(args.config), args.flow))

        def once() -> str:
            rows, problems = source.rows()
            if args.json:
                return json.dumps({"partitions": rows, "problems": problems}, indent=2)
            return render_status(rows, problems)

        return _watch(args, once)


class Lag:
    NAME = "lag"
    HELP = "a consumer group's lag on the source, and where it would resume on the target"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("config", metavar="FILE", help="mm2.properties")
        parser.add_argument("--group", required=True, help="the consumer group")
        parser.add_argument("--flow", metavar="SOURCE->TARGET", help="one flow only")
        parser.add_argument("--json", action="store_true", help="print JSON rows")
        parser.add_argument("--watch", type=float, metavar="SECONDS", help="refresh forever")
        parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS")

    def run(self, args: argparse.Namespace) -> int:
        flows = _flows(load(args.config), args.flow)

        def once() -> str:
            rows = [r for f in flows for r in group_rows(f, args.group, args.timeout)]
            if args.json:
                return json.dumps(rows, indent=2)
            body = [
                [
                    _cell(r[k])
                    for k in (
                        "group",
                        "flow",
                        "topic",
                        "partition",
                        "offset",
                        "log_size",
                        "lag",
                        "target_topic",
                        "target_offset",
                        "target_log_size",
                        "target_lag",
                    )
                ]
                for r in rows
            ]
            return table(LAG_HEADER, body) if body else f"group {args.group} has no commits"

        return _watch(args, once)


def group_rows(flow: Flow, group: str, timeout: float) -> list[dict[str, Any]]:
    """The group's partitions on flow.source, with their translation onto flow.target."""
    plan = plan_failover(flow, group, timeout=timeout)
    source = OffsetLister(flow.source_admin_config(label="lag-admin"), timeout=timeout)
    target = OffsetLister(flow.target_admin_config(label="lag-admin"), timeout=timeout)
    ends = source.offsets(
        [(m.source.topic, m.source.partition) for m in plan.moves],
        latest=True,
        read_committed=False,
    )
    remote = [m.target for m in plan.moves if m.target is not None]
    target_ends = target.offsets(
        [(t.topic, t.partition) for t in remote], latest=True, read_committed=False
    )
    rows = []
    for m in plan.moves:
        end = ends.get((m.source.topic, m.source.partition))
        t_end = None if m.target is None else target_ends.get((m.target.topic, m.target.partition))
        rows.append(
            {
                "group": group,
                "flow": flow.name,
                "topic": m.source.topic,
                "partition": m.source.partition,
                "offset": m.source_offset,
                "log_size": end,
                "lag": None if end is None else max(0, end - m.source_offset),
                "target_topic": None if m.target is None else m.target.topic,
                "target_offset": m.target_offset,
                "target_log_size": t_end,
                "target_lag": None
                if t_end is None or m.target_offset is None
                else max(0, t_end - m.target_offset),
                "note": m.note,
            }
        )
    return rows


COMMANDS = (Status(), Lag())
