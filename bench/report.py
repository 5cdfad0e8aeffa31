"""Results out: the side-by-side markdown table with ratios and targets, JSON, PNG plots."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from bench.groups import group_markdown
from bench.stats import ratio
from bench.systems import AT_LEAST_ONCE, SCHEMAS

__all__ = [
    "APPEND_LATENCY",
    "COMMITTED_LATENCY",
    "EOS_NOTE",
    "LATENCY_NOTE",
    "SCHEMA_NOTE",
    "Row",
    "figure",
    "markdown",
    "ratio_text",
    "rows",
    "schema_markdown",
    "workload_key",
    "write_results",
]

APPEND_LATENCY = "append latency (read_uncommitted)"
COMMITTED_LATENCY = "committed latency (read_committed)"
LATENCY_NOTE = (
    f"W2 {APPEND_LATENCY}: the target's LogAppendTime minus the source timestamp, when a "
    "record is on the target's log. "
    f"W2 {COMMITTED_LATENCY}: when a read_committed consumer of the target received the record "
    "minus the source timestamp; with exactly-once that waits for the transaction's commit."
)
EOS_NOTE = (
    "mm2 runs twice: with exactly-once (`exactly.once.source.support = enabled`, the default) "
    "and with it disabled (idempotent, at-least-once: mm2 EOS off); everything else is the same. "
    "EOS on / off is mm2 with exactly-once over mm2 without it: the cost of exactly-once."
)

# (label, getter, unit, higher is better, target text, target check on (ours, apache, results))
Getter = Callable[[Mapping[str, Any]], float | None]
Check = Callable[[float | None, float | None, Mapping[str, Any]], bool | None]


def _get(*path: str) -> Getter:
    def get(system: Mapping[str, Any]) -> float | None:
        node: Any = system
        for key in path:
            if not isinstance(node, Mapping) or key not in node:
                return None
            node = node[key]
        return None if node is None else float(node)

    return get


def _mb(get: Getter) -> Getter:
    return lambda s: None if (v := get(s)) is None else v / 2**20


class Row:
    def __init__(
        self,
        workload: str,
        label: str,
        get: Getter,
        unit: str,
        *,
        target: str = "",
        check: Check | None = None,
        whole: bool = False,
    ) -> None:
        self.workload, self.label, self.get, self.unit = workload, label, get, unit
        self.target, self.check, self.whole = target, check, whole


def _ceiling_fraction(results: Mapping[str, Any]) -> float | None:
    ours = _get("w1", "mm2", "records_per_s")(results)
    return ratio(ours, _get("ceiling", "ceiling_records_per_s")(results))


def _across_a_link(results: Mapping[str, Any]) -> bool:
    """Whether the run reached the source through the link (W6, `--link`)."""
    meta = results.get("meta")
    settings = meta.get("settings") if isinstance(meta, Mapping) else None
    link = settings.get("link") if isinstance(settings, Mapping) else None
    return link not in (None, "None", "")


def _under(limit: float) -> Check:
    return lambda ours, _apache, _r: None if ours is None else ours < limit


# W2's two latencies: the JSON key of each and its label in the table.
LATENCIES = (
    ("latency_ms", APPEND_LATENCY),
    ("committed_latency_ms", COMMITTED_LATENCY),
)


# W2's targets, against Apache MM2's default (at-least-once) in the same run: append p50 and
# p99 no higher than Apache's; a read_committed reader's p50 at most Apache's append p50 + 20 ms
# and its p99 at most Apache's committed p99 + 100 ms.
def _apache(*path: str) -> Getter:
    return _get("w2", "apache", *path)


def _within(limit: Callable[[Mapping[str, Any]], float | None], plus: float) -> Check:
    def check(ours: float | None, _apache: float | None, r: Mapping[str, Any]) -> bool | None:
        bound = limit(r)
        return None if ours is None or bound is None else ours <= bound + plus

    return check


LATENCY_TARGETS: dict[tuple[str, str], tuple[str, Check]] = {
    ("latency_ms", "p50"): ("<= Apache", lambda o, a, r: _no_more(o, a, r)),
    ("latency_ms", "p99"): ("<= Apache", lambda o, a, r: _no_more(o, a, r)),
    ("committed_latency_ms", "p50"): (
        "<= Apache's append p50 + 20 ms",
        _within(_apache("latency_ms", "p50"), 20),
    ),
    ("committed_latency_ms", "p99"): (
        "<= Apache's committed p99 + 100 ms",
        _within(_apache("committed_latency_ms", "p99"), 100),
    ),
}


def _latency_rows() -> list[Row]:
    """Each W2 statistic for both latencies, one row after the other so they read side by side."""
    out = []
    for stat in ("p50", "p95", "p99", "max"):
        for key, label in LATENCIES:
            target, check = LATENCY_TARGETS.get((key, stat), ("", None))
            out.append(
                Row("W2", f"{label} {stat}", _get(key, stat), "ms", target=target, check=check)
            )
    out.extend(
        Row("W2", f"{label} samples", _get(key, "samples"), "records", whole=True)
        for key, label in LATENCIES
    )
    return out


def rows() -> list[Row]:
    return [
        Row(
            "W1",
            "throughput",
            _get("records_per_s"),
            "records/s",
            target=">= 3x Apache (2x across a link), >= 80% of ceiling",
            check=lambda o, a, r: (
                None
                if o is None or a is None or (f := _ceiling_fraction(r)) is None
                else o >= (2 if _across_a_link(r) else 3) * a and f >= 0.8
            ),
        ),
        Row("W1", "throughput", _get("mb_per_s"), "MB/s"),
        Row(
            "W1",
            "start to first record",
            _get("first_record_s"),
            "s",
            target="<= Apache",
            check=_no_more,
        ),
        Row("W1", "start to all records", _get("total_s"), "s"),
        Row(
            "W4",
            "peak RSS during W1",
            _mb(_get("peak_rss_bytes")),
            "MiB",
            target="<= Apache",
            check=_no_more,
        ),
        Row("W4", "peak PSS during W1", _mb(_get("peak_pss_bytes")), "MiB"),
        Row("W4", "CPU during W1", _get("cpu_s_per_m"), "CPU s / M records"),
        Row("W2", "produced rate", _get("produced_per_s"), "records/s"),
        *_latency_rows(),
        Row(
            "W4",
            "peak RSS during W2",
            _mb(_get("peak_rss_bytes")),
            "MiB",
            target="<= Apache",
            check=_no_more,
        ),
        Row("W4", "peak PSS during W2", _mb(_get("peak_pss_bytes")), "MiB"),
        Row(
            "W4",
            "CPU during W2",
            _get("cpu_s_per_m"),
            "CPU s / M records",
            target="<= 0.6x Apache",
            check=lambda o, a, _r: None if o is None or a is None else o <= 0.6 * a,
        ),
        Row("W3", "all topics mirrored", _get("mirrored_s"), "s", target="< Apache", check=_lower),
        Row(
            "W3",
            "new topic to first record",
            _get("new_topic_s"),
            "s",
            target="< 5 s",
            check=_under(5),
        ),
        Row(
            "W3",
            "config change visible",
            _get("config_change_s"),
            "s",
            target="< 5 s",
            check=_under(5),
        ),
        Row("W4", "peak RSS during W3", _mb(_get("peak_rss_bytes")), "MiB"),
        Row(
            "W4",
            "peak RSS per partition during W3",
            lambda s: None if (v := _get("rss_per_partition_bytes")(s)) is None else v / 2**10,
            "KiB",
        ),
        Row("W4", "CPU during W3", _get("cpu_s"), "CPU s"),
        *_mesh_rows(),
    ]


def _no_more(o: float | None, a: float | None, _r: Mapping[str, Any]) -> bool | None:
    """At most Apache MM2's figure (None: a figure is missing)."""
    return None if o is None or a is None else o <= a


def _lower(o: float | None, a: float | None, _r: Mapping[str, Any]) -> bool | None:
    """Below Apache MM2's figure (None: a figure is missing)."""
    return None if o is None or a is None else o < a


# W7: twelve flows over four clusters, idle and at a rate per flow (bench.mesh): each row's
# label, where its figure is, its unit, and its target against Apache MM2 (none: a figure beside
# the targets, e.g. PSS beside RSS).
_MESH: tuple[tuple[str, Getter, str, str, Check | None], ...] = (
    ("start to every flow copying", _get("start_s"), "s", "<= Apache", _no_more),
    ("idle CPU", _get("idle", "cpu_core_pct"), "% of a core", "< Apache", _lower),
    ("idle RSS", _mb(_get("idle", "rss_bytes")), "MiB", "< Apache", _lower),
    ("idle PSS", _mb(_get("idle", "pss_bytes")), "MiB", "", None),
    ("CPU under load", _get("load", "cpu_s_per_m"), "CPU s / M records", "< Apache", _lower),
    ("peak RSS", _mb(_get("peak_rss_bytes")), "MiB", "< Apache", _lower),
    ("peak PSS", _mb(_get("peak_pss_bytes")), "MiB", "", None),
)


def _mesh_rows() -> list[Row]:
    return [Row("W7", *row[:3], target=row[3], check=row[4]) for row in _MESH]


def workload_key(row: Row) -> str:
    """The results' key of a row's workload (W4 rows: the workload they were measured in)."""
    if row.workload == "W4":
        return next((w.lower() for w in ("W1", "W2", "W3") if w in row.label), "w2")
    return row.workload.lower()


def _fmt(value: float | None, timed_out: float | None = None, *, whole: bool = False) -> str:
    if value is None:
        return f"> {timed_out:.0f} (timed out)" if timed_out is not None else "n/a"
    if whole or abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.2f}"


def _timed_out(row: Row, system: Mapping[str, Any]) -> float | None:
    flag = {
        "new topic to first record": "new_topic_timed_out",
        "config change visible": "config_change_timed_out",
    }.get(row.label)
    if flag is not None and system.get(flag):
        return float(system.get("wait_bound_s", 0))
    return None


def figure(row: Row, system: Mapping[str, Any]) -> str:
    """A system's figure for a row, as the tables show it ("> N (timed out)" for a capped wait)."""
    return _fmt(row.get(system), _timed_out(row, system), whole=row.whole)


def _has_at_least_once(results: Mapping[str, Any]) -> bool:
    """Whether the run had mm2 with exactly-once disabled as a third system."""
    return any(
        isinstance(block, Mapping) and AT_LEAST_ONCE in block
        for block in (results.get(w) for w in ("w1", "w2", "w3"))
    )


def ratio_text(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def markdown(results: Mapping[str, Any]) -> str:
    """The comparison table, then the ceiling and correctness lines.

    With the at-least-once run of mm2 in the results, the table gets its column, its ratio to
    Apache MM2 and the cost of exactly-once (mm2 / mm2 with exactly-once disabled); the targets
    stay mm2's (exactly-once on).
    """
    third = _has_at_least_once(results)
    if third:
        lines = [
            EOS_NOTE,
            "",
            "| workload | metric | mm2 | mm2 EOS off | Apache MM2 | mm2 / Apache "
            "| EOS off / Apache | EOS on / off | target | met |",
            "|---|---|---:|---:|---:|---:|---:|---:|---|---|",
        ]
    else:
        lines = [
            "| workload | metric | mm2 | Apache MM2 | mm2 / Apache | target | met |",
            "|---|---|---:|---:|---:|---|---|",
        ]
    for row in rows():
        block = results.get(workload_key(row))
        if not isinstance(block, Mapping):
            continue
        ours_sys = block.get("mm2", {})
        theirs_sys = block.get("apache", {})
        ours, theirs = row.get(ours_sys), row.get(theirs_sys)
        r = ratio(ours, theirs)
        met = "" if row.check is None else row.check(ours, theirs, results)
        verdict = {True: "yes", False: "**no**", None: "n/a", "": ""}[met]
        ours_text, theirs_text = figure(row, ours_sys), figure(row, theirs_sys)
        if third:
            off_sys = block.get(AT_LEAST_ONCE, {})
            off = row.get(off_sys)
            off_text = figure(row, off_sys)
            lines.append(
                f"| {row.workload} | {row.label} ({row.unit}) | {ours_text} | {off_text} | "
                f"{theirs_text} | {ratio_text(r)} | {ratio_text(ratio(off, theirs))} | "
                f"{ratio_text(ratio(ours, off))} | {row.target} | {verdict} |"
            )
        else:
            lines.append(
                f"| {row.workload} | {row.label} ({row.unit}) | {ours_text} | {theirs_text} | "
                f"{ratio_text(r)} | {row.target} | {verdict} |"
            )
    lines.append("")
    if isinstance(results.get("w2"), Mapping):
        lines.append(LATENCY_NOTE)
        lines.append("")
        for system, res in results["w2"].items():
            if isinstance(res, Mapping) and res.get("committed_latency_error"):
                lines.append(
                    f"W2 {system}: the read_committed reader failed: "
                    f"{res['committed_latency_error']}"
                )
                lines.append("")
    lines.extend(schema_markdown(results))
    if isinstance(results.get("w5"), Mapping):
        lines.extend(group_markdown(results["w5"]))
    ceiling = results.get("ceiling")
    if isinstance(ceiling, Mapping):
        frac = _ceiling_fraction(results)
        theirs_rate = _get("w1", "apache", "records_per_s")(results)
        limit = ceiling.get("ceiling_records_per_s")
        off_text = ""
        if third:
            off_rate = _get("w1", AT_LEAST_ONCE, "records_per_s")(results)
            off_text = f", mm2 with exactly-once disabled {_pct(ratio(off_rate, limit))}"
        if ceiling.get("copiers") is not None:
            what = (
                f"{ceiling['copiers']} plain copiers (a consumer and a producer each, as many as "
                f"the mirrors' copy tasks) {_fmt(ceiling.get('copy_records_per_s'))} records/s; "
                f"for reference one plain consumer on the source "
                f"{_fmt(ceiling.get('read_records_per_s'))} records/s, one plain producer to the "
                f"target {_fmt(ceiling.get('write_records_per_s'))} records/s; mm2 reached "
                f"{'n/a' if frac is None else f'{frac:.0%}'} of the copiers' rate"
            )
        else:  # results written before the copiers were measured
            what = (
                f"plain consumer on the source {_fmt(ceiling.get('read_records_per_s'))} "
                f"records/s, plain producer to the target "
                f"{_fmt(ceiling.get('write_records_per_s'))} records/s; mm2 reached "
                f"{'n/a' if frac is None else f'{frac:.0%}'} of the lower"
            )
        lines.append(
            f"Ceiling (W1 data): {what}{off_text}, Apache MM2 {_pct(ratio(theirs_rate, limit))}."
        )
        lines.append("")
    lines.append("Correctness (per-partition counts and digests, source vs target):")
    lines.append("")
    for workload in ("w1", "w2", "w3", "w7"):
        block = results.get(workload)
        if not isinstance(block, Mapping):
            continue
        for system, res in block.items():
            v = res.get("verify", {})
            state = "passed" if v.get("ok") else "**FAILED**"
            extra = "" if v.get("ok") else ": " + "; ".join(v.get("problems", [])[:5])
            if res.get("error"):
                extra += f" (the run stopped: {res['error']})"
            lines.append(
                f"- {workload.upper()} {system}: {state} ({v.get('records_source')} source, "
                f"{v.get('records_target')} target records){extra}"
            )
    return "\n".join(lines) + "\n"


SCHEMA_NOTE = (
    "Schema IDs (`--avro`): every value is an Avro record with the source registry's schema ID. "
    "mm2 copies it byte for byte; mm2 with IDs translated has a registry on each side and "
    "rewrites the ID of every value to the target registry's, inside the same transaction. "
    "Translated / as is is the cost of the translation."
)


def schema_markdown(results: Mapping[str, Any]) -> list[str]:
    """With mm2-schemas in the run: its W1 and W2 figures beside mm2's, and their ratio."""
    blocks = {w: results.get(w) for w in ("w1", "w2")}
    if not any(isinstance(b, Mapping) and SCHEMAS in b for b in blocks.values()):
        return []
    lines = [
        SCHEMA_NOTE,
        "",
        "| workload | metric | mm2, IDs as is | mm2, IDs translated | translated / as is |",
        "|---|---|---:|---:|---:|",
    ]
    for row in rows():
        block = blocks.get(workload_key(row))
        if not isinstance(block, Mapping) or SCHEMAS not in block:
            continue
        plain, translated = row.get(block.get("mm2", {})), row.get(block[SCHEMAS])
        lines.append(
            f"| {row.workload} | {row.label} ({row.unit}) | {_fmt(plain, whole=row.whole)} | "
            f"{_fmt(translated, whole=row.whole)} | {ratio_text(ratio(translated, plain))} |"
        )
    return [*lines, ""]


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0%}"


def write_results(results: Mapping[str, Any], folder: Path) -> list[Path]:
    """results.json, results.md and the plots; the paths written."""
    folder.mkdir(parents=True, exist_ok=True)
    written = [folder / "results.json", folder / "results.md"]
    written[0].write_text(json.dumps(results, indent=1, default=str) + "\n", encoding="utf-8")
    written[1].write_text(markdown(results), encoding="utf-8")
    from bench.plots import plot_all  # matplotlib only when writing

    written.extend(plot_all(results, folder))
    return written
