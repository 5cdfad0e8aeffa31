"""W1 backlog: a pre-filled topic mirrored as fast as each system can; and the ceiling."""

from __future__ import annotations

from typing import Any

from tqdm import tqdm

from bench.ceiling import plain_copy_rate
from bench.context import Context, finish, remote
from bench.data import RecordShape, fill
from bench.stats import rate_between, steady_rate
from bench.systems import LABELS, SystemName
from bench.verify import compare, read_topic

__all__ = ["run_backlog", "run_ceiling"]

HEADERS: list[tuple[str, str | bytes | None]] = [("bench", b"w1")]


def _fill(
    ctx: Context,
    topic: str,
    bootstrap: str,
    desc: str,
    schema_id: int | None,
    *,
    warm_up: bool = False,
) -> float:
    s = ctx.settings
    with tqdm(total=s.w1_records, desc=desc, unit="rec") as bar:
        return fill(
            bootstrap,
            topic,
            s.w1_partitions,
            s.w1_records,
            RecordShape(s.w1_record_bytes, schema_id=schema_id),
            headers=HEADERS,
            progress=bar.update,
            warm_up=warm_up,
        )


def run_backlog(ctx: Context, system: SystemName) -> dict[str, Any]:
    s = ctx.settings
    topic = ctx.topic("w1", system)
    label = LABELS[system]
    ctx.src.create_topics([topic], s.w1_partitions)
    schema_id = ctx.value_schema(topic)
    fill_s = _fill(ctx, topic, ctx.primary, f"W1 fill source for {label}", schema_id)
    with ctx.launch("w1", system, topic) as mirror:
        target = remote(topic)
        curve, reached = ctx.wait_arrivals(
            mirror,
            [(target, p) for p in range(s.w1_partitions)],
            s.w1_records,
            timeout_s=s.w1_timeout_s,
            desc=f"W1 {label} mirrored",
        )
        use = mirror.sampler.stop()
        result: dict[str, Any] = {"topic": topic, "records": s.w1_records, "fill_s": fill_s}
        result["reached"] = reached
        result["curve"] = curve
        window = rate_between(curve, s.w1_records)
        rate = steady_rate(s.w1_records, window)
        result["first_record_s"] = None if window is None else window[0]
        result["total_s"] = None if window is None else window[1]
        result["records_per_s"] = rate
        result["mb_per_s"] = None if rate is None else rate * s.w1_record_bytes / 1e6
        result["peak_rss_bytes"] = use.peak_rss_bytes
        result["peak_pss_bytes"] = use.peak_pss_bytes
        result["cpu_s"] = use.cpu_seconds
        result["cpu_s_per_m"] = use.cpu_seconds_per_million(s.w1_records)
        result["processes"] = use.processes
        with tqdm(total=2 * s.w1_records, desc=f"W1 {label} verify", unit="rec") as bar:
            source = read_topic(ctx.primary, topic, s.w1_partitions, progress=bar.update)
            mirrored = read_topic(
                ctx.backup,
                target,
                s.w1_partitions,
                progress=bar.update,
                value_map=ctx.ids_back(system, topic, schema_id),
            )
        verdict = compare({topic: source.partitions}, {topic: mirrored.partitions})
        result["verify"] = verdict.__dict__ | {"problems": list(verdict.problems[:20])}
        result.update(finish(mirror))
    ctx.src.delete_topics([topic])
    ctx.dst.delete_topics([target])
    return result


def run_ceiling(ctx: Context) -> dict[str, Any]:
    """The ceiling for W1's data: as many plain copiers as the mirrors have copy tasks
    (bench.ceiling), and, for reference, one plain consumer's read rate and one plain
    producer's write rate."""
    s = ctx.settings
    topic = ctx.topic("w1", "mm2", "-ceiling")
    copied_to = f"{topic}-copy"
    ctx.src.create_topics([topic], s.w1_partitions)
    ctx.dst.create_topics([topic, copied_to], s.w1_partitions)
    schema_id = ctx.value_schema(topic)  # the same records as the systems'
    try:
        _fill(ctx, topic, ctx.primary, "ceiling: fill source", schema_id)
        with tqdm(total=s.w1_records, desc="ceiling: plain consumer on source", unit="rec") as bar:
            read = read_topic(
                ctx.source_for_mirrors, topic, s.w1_partitions, digest=False, progress=bar.update
            )
        write_s = _fill(
            ctx, topic, ctx.backup, "ceiling: plain producer to target", schema_id, warm_up=True
        )
        tqdm.write(f"ceiling: {s.tasks_max} plain copiers, source to target")
        copy_rate, copied = plain_copy_rate(
            ctx.source_for_mirrors, ctx.backup, topic, copied_to, s.w1_partitions, s.tasks_max
        )
    finally:
        ctx.src.delete_topics([topic])
        ctx.dst.delete_topics([topic, copied_to])
    if copied != s.w1_records:
        raise RuntimeError(f"the plain copiers copied {copied} of {s.w1_records} records")
    read_rate = read.records / read.seconds if read.seconds > 0 else None
    write_rate = s.w1_records / write_s if write_s > 0 else None
    return {
        "records": s.w1_records,
        "read_records_per_s": read_rate,
        "write_records_per_s": write_rate,
        "copiers": s.tasks_max,
        "copy_records_per_s": copy_rate,
        "ceiling_records_per_s": copy_rate,
        "ceiling_mb_per_s": copy_rate * s.w1_record_bytes / 1e6,
    }
