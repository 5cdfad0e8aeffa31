"""`mm2 translate-offsets`, `mm2 failover` and `mm2 failback`: consumer groups across clusters.

`mm2 failover` and `mm2 failback` move one group at a time; the producers usually move once,
after the last group. So the target's Schema Registry is changed only when asked, with
`--schema-registry` (mm2.client.registries: put in READWRITE, and what the flow the other way
will do with schema IDs); without it, a flow that mirrors schemas gets a one-line reminder.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence

from mm2.client.failover import (
    DEFAULT_TIMEOUT,
    Applied,
    apply_failover,
    plan_failover,
    target_group_admin,
    translate_all_groups,
)
from mm2.client.plan import FailoverPlan, PartitionMove
from mm2.client.recovery import RecoveryPoint, recovery_point, utc
from mm2.client.registries import RegistryStep, make_target_writable, mirrors_schemas
from mm2.config import Flow, MirrorMakerConfig, load
from mm2.errors import ConfigError, KafkaClientError

__all__ = [
    "COMMANDS",
    "Failback",
    "Failover",
    "TranslateOffsets",
    "add_switches",
    "add_timeout",
    "render_plan",
    "render_recovery_point",
]


def _common(
    parser: argparse.ArgumentParser, source: str, target: str, *, all_groups: bool = False
) -> None:
    parser.add_argument("--config", required=True, metavar="FILE", help="mm2.properties")
    if all_groups:
        which = parser.add_mutually_exclusive_group(required=True)
        which.add_argument("--group", help="the consumer group")
        which.add_argument(
            "--all-groups",
            action="store_true",
            help="every group the flow mirrors, in one pass (the offset syncs read once)",
        )
    else:
        parser.add_argument("--group", required=True, help="the consumer group")
    parser.add_argument(
        source,
        required=True,
        dest="source",
        metavar="ALIAS",
        help="the cluster the group consumes from now",
    )
    parser.add_argument(
        target, required=True, dest="target", metavar="ALIAS", help="the cluster it moves to"
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    add_timeout(parser)


def add_timeout(parser: argparse.ArgumentParser) -> None:
    """`--timeout SECONDS`: how long each Kafka request may take (these commands and switchover)."""
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help=f"per Kafka request (default {DEFAULT_TIMEOUT:.0f})",
    )


def add_switches(parser: argparse.ArgumentParser, *switches: tuple[str, str]) -> None:
    """On/off options, each a (flag, help) pair: present means True."""
    for flag, text in switches:
        parser.add_argument(flag, action="store_true", help=text)


def _flow(config: MirrorMakerConfig, source: str, target: str) -> Flow:
    for alias in (source, target):
        if alias not in config.clusters:
            raise ConfigError(
                f"unknown cluster alias {alias!r}; clusters defined: {', '.join(config.clusters)}",
                file=config.path,
            )
    if source == target:
        raise ConfigError(f"source and target are both {source!r}", file=config.path)
    try:
        return config.flow(source, target)
    except KeyError:
        flows = ", ".join(f.name for f in config.flows) or "none"
        raise ConfigError(
            f"no flow {source}->{target} in the file (flows: {flows})", file=config.path
        ) from None


def _optional_flow(config: MirrorMakerConfig, source: str, target: str) -> Flow | None:
    try:
        return config.flow(source, target)
    except KeyError:
        return None


def _cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def _row(m: PartitionMove) -> list[str]:
    return [
        str(m.source),
        _cell(m.source_offset),
        _cell(m.target),
        _cell(m.target_offset),
        _cell(m.exact) if m.translated else "-",
        _cell(m.rereads_at_most) if m.translated else "-",
        _cell(m.current_target_offset),
        m.note,
    ]


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
        for r in [header, *rows]
    ]
    return "\n".join(lines)


def render_plan(plan: FailoverPlan) -> str:
    header = [
        "SOURCE PARTITION",
        "COMMIT",
        "TARGET PARTITION",
        "OFFSET",
        "EXACT",
        "RE-READ<=",
        "ON TARGET NOW",
        "NOTE",
    ]
    out = [
        f"{plan.kind} of group {plan.group!r}: {plan.source} -> {plan.target} (from {plan.basis})",
        *(f"note: {n}" for n in plan.notes),
        "",
        table(header, [_row(m) for m in plan.moves]),
        "",
    ]
    rereads = plan.rereads_at_most
    out.append(
        f"{len(plan.translated)} of {len(plan.moves)} partition(s) translated; records re-read: "
        + ("unknown (checkpoints carry no bound)" if rereads is None else f"at most {rereads}")
    )
    if plan.untranslated:
        out.append(f"{len(plan.untranslated)} partition(s) left alone (see NOTE)")
    return "\n".join(out)


def _render_applied(plan: FailoverPlan, applied: Applied) -> str:
    lines = [
        f"committed {len(applied.committed)} partition(s) for group {plan.group!r} "
        f"on {plan.target!r}"
    ]
    for tp, (now, planned) in sorted(applied.kept.items()):
        lines.append(f"kept {tp} at {now}: ahead of the planned {planned} (--force moves it back)")
    return "\n".join(lines)


def _move(args: argparse.Namespace, kind: str) -> int:
    config = load(args.config)
    flow = _flow(config, args.source, args.target)
    other = _optional_flow(config, args.target, args.source)
    plan = plan_failover(
        flow,
        args.group,
        reverse_flow=other,
        failback=kind == "failback",
        from_checkpoints=args.from_checkpoints,
        timeout=args.timeout,
    )
    applied = None
    if not args.dry_run:
        applied = apply_failover(plan, target_group_admin(flow, args.timeout), force=args.force)
    # What the flow had not copied of what it saw (a failback's flow is the way back). Extra
    # information: a failure to read it is said, never the end of the command.
    at_risk: RecoveryPoint | None = None
    unread = ""
    if kind == "failover":
        try:
            at_risk = recovery_point(flow, timeout=args.timeout)
        except KafkaClientError as exc:
            unread = f"recovery point of {flow.name} not read: {exc}"
    # Last, so that a registry that fails hides none of the above (exit status 1).
    registry: RegistryStep | None = None
    if args.schema_registry:
        registry = make_target_writable(flow, other, dry_run=args.dry_run)
    if args.json:
        doc = plan.to_json()
        doc["dry_run"] = args.dry_run
        if applied is not None:
            doc["applied"] = applied.to_json()
        if at_risk is not None:
            doc["recovery_point"] = at_risk.to_json()
        if unread:
            doc["recovery_point_error"] = unread
        if registry is not None:
            doc["schema_registry"] = registry.to_json()
        print(json.dumps(doc, indent=2))
    else:
        print(render_plan(plan))
        print("dry run: nothing committed" if applied is None else _render_applied(plan, applied))
        if at_risk is not None:
            print()
            print(render_recovery_point(at_risk))
        if unread:
            print()
            print(unread)
        _print_registry(flow, registry, args.dry_run)
    return 1 if registry is not None and registry.failed else 0


def _print_registry(flow: Flow, registry: RegistryStep | None, dry_run: bool) -> None:
    if registry is not None:
        print()
        print("schema registry:" + (" (dry run: nothing changed)" if dry_run else ""))
        print("\n".join(f"  {line}" for line in registry.said))
    elif mirrors_schemas(flow):
        print()
        print(
            f"{flow.name} mirrors schemas: when producers move to {flow.target}, run this with "
            f"--schema-registry to put {flow.target}'s registry in READWRITE"
        )


def render_recovery_point(point: RecoveryPoint) -> str:
    """The flow's recovery point: per source partition, copied up to, the source's end and when
    it was read, at risk (a bound only from ends read for this report), then one sentence."""
    header = [
        "SOURCE PARTITION",
        "COPIED TO",
        "SOURCE END",
        "END READ AT (UTC)",
        "AT RISK<=",
        "UNCOPIED BELOW END",
    ]

    def cell(value: int | None) -> str:
        return "-" if value is None else str(value)

    body = [
        [
            f"{r.topic}-{r.partition}",
            cell(r.copied_to),
            cell(r.source_end),
            "-" if r.ends_read_at_ms is None else utc(r.ends_read_at_ms),
            "unknown" if r.at_risk is None else str(r.at_risk),
            cell(r.uncopied_below_end),
        ]
        for r in point.partitions
    ]
    return "\n".join(
        [
            f"recovery point of {point.flow} (what the mirror copied of the source's ends):",
            "",
            table(header, body),
            "",
            point.summary(),
        ]
    )


class TranslateOffsets:
    NAME = "translate-offsets"
    HELP = "where a consumer group would resume on another cluster, per partition"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        _common(parser, "--source", "--target", all_groups=True)
        parser.add_argument(
            "--from-checkpoints",
            action="store_true",
            help="the checkpoints' view instead of live commits and syncs",
        )

    def run(self, args: argparse.Namespace) -> int:
        config = load(args.config)
        flow = _flow(config, args.source, args.target)
        if args.all_groups:
            if args.from_checkpoints:
                raise ConfigError(
                    "--all-groups reads live commits and offset syncs: leave out "
                    "--from-checkpoints, or name one --group"
                )
            plans = translate_all_groups(
                flow,
                reverse_flow=_optional_flow(config, args.target, args.source),
                timeout=args.timeout,
            )
            if args.json:
                print(json.dumps({"groups": [p.to_json() for p in plans]}, indent=2))
            else:
                print("\n\n".join(render_plan(p) for p in plans) or "no group to translate")
            return 0
        plan = plan_failover(
            flow,
            args.group,
            reverse_flow=_optional_flow(config, args.target, args.source),
            from_checkpoints=args.from_checkpoints,
            timeout=args.timeout,
        )
        print(json.dumps(plan.to_json(), indent=2) if args.json else render_plan(plan))
        return 0


class _MoveCommand:
    NAME = ""
    HELP = ""
    source_flag = "--from"
    target_flag = "--to"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        _common(parser, self.source_flag, self.target_flag)
        add_switches(
            parser,
            ("--dry-run", "show the plan, commit nothing"),
            ("--force", "also move target commits that are ahead of the plan back"),
            ("--from-checkpoints", "use the target's checkpoints even if the source answers"),
            (
                "--schema-registry",
                "also put the target's Schema Registry in READWRITE for the producers that "
                "move there (with --dry-run: say what would change)",
            ),
        )

    def run(self, args: argparse.Namespace) -> int:
        return _move(args, self.NAME)


class Failover(_MoveCommand):
    NAME = "failover"
    HELP = "move a consumer group to the backup cluster: its commits translated, nothing lost"


class Failback(_MoveCommand):
    NAME = "failback"
    HELP = "return a failed-over consumer group to its original cluster, skipping nothing"


COMMANDS = (TranslateOffsets(), Failover(), Failback())
