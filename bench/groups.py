"""W5 group offsets: how soon a source group's commit shows on the target's copy of the group.

A producer writes `w5_rate` records/s to a fresh source topic for `w5_seconds`; a consumer
group on the source reads it and commits every 200 ms. Both systems run with
`sync.group.offsets.enabled = true`; Apache MM2 runs twice, with its own intervals and with
refresh.groups, emit.checkpoints and sync.group.offsets lowered to 1 s. The group is new when
the measured phase starts, so the time until it first shows on the target is how long a new
group takes to be found. Latencies and what counts as reached: bench.group_latency.
"""

from __future__ import annotations

import time
from typing import Any

from confluent_kafka import Producer
from tqdm import tqdm

from bench.context import Context, RunningMirror, remote
from bench.data import producer_config
from bench.group_latency import SourceGroup, TargetGroupPoller, latencies, target_offsets, value_for
from bench.stats import latency_summary, percentile_curve
from bench.systems import LABELS, SystemName, is_ours

__all__ = ["APACHE_1S", "run_groups"]

SYNC_ON = {"sync.group.offsets.enabled": "true"}
APACHE_1S = {
    "refresh.groups.interval.seconds": "1",
    "emit.checkpoints.interval.seconds": "1",
    "sync.group.offsets.interval.seconds": "1",
}
_PAD = b"." * 100


def _variants(system: SystemName) -> dict[str, dict[str, str]]:
    if is_ours(system):
        return {"defaults": SYNC_ON}
    return {"defaults": SYNC_ON, "intervals 1 s": {**SYNC_ON, **APACHE_1S}}


def run_groups(ctx: Context, system: SystemName) -> dict[str, Any]:
    result: dict[str, Any] = {"variants": {}}
    for name, extra in _variants(system).items():
        suffix = "" if name == "defaults" else "-1s"
        result["variants"][name] = _one(ctx, system, extra, suffix)
    failed = [v["error"] for v in result["variants"].values() if v.get("error")]
    result["verify"] = {"ok": not failed, "problems": failed}
    return result


def _one(ctx: Context, system: SystemName, extra: dict[str, str], suffix: str) -> dict[str, Any]:
    s = ctx.settings
    topic = ctx.topic("w5", system, suffix)
    target = remote(topic)
    group = f"w5-group-{system}-{ctx.run_id}{suffix}"
    ctx.src.create_topics([topic], s.w5_partitions)
    label = f"W5 {LABELS[system]}{' (1 s intervals)' if suffix else ''}"
    with ctx.launch(f"w5{suffix}", system, topic, extra=extra) as mirror:
        producer = Producer(producer_config(ctx.primary, **{"linger.ms": 1}))
        sent = _warm_up(ctx, mirror, topic, target, producer, label)
        source = SourceGroup(ctx.primary, group, topic).start()
        poller = TargetGroupPoller(ctx.backup, group, target).start()
        try:
            sent = _paced(producer, topic, sent, s.w5_rate, s.w5_seconds, label)
            ctx.wait_arrivals(
                mirror,
                [(target, p) for p in range(s.w5_partitions)],
                sum(sent.values()),
                timeout_s=mirror.elapsed() + 120,
                desc=f"{label} drained",
            )
            time.sleep(s.w5_settle_s)
        finally:
            source.stop()
            poller.stop()
        copies = target_offsets(ctx.backup, target, s.w5_partitions)
    ctx.src.delete_topics([topic])
    ctx.dst.delete_topics([target])
    timed, missed = latencies(source.commits, poller.seen, copies)
    first_commit = source.commits[0].at if source.commits else None
    first_seen = poller.seen[0][0] if poller.seen else None
    lat = [seconds for _, seconds in timed]
    # Once the group is on the target: its first commits also wait for the group to be found,
    # which `new_group_s` measures on its own.
    found = [seconds for at, seconds in timed if first_seen is not None and at >= first_seen]
    return {
        "topic": topic,
        "group": group,
        "settings": extra,
        "records": sum(sent.values()),
        "commits": len(source.commits),
        "reached": len(lat),
        "missed": missed,
        "latency_s": latency_summary(lat),
        "latency_hist": percentile_curve(lat),
        "found_latency_s": latency_summary(found),
        "found_latency_hist": percentile_curve(found),
        "series": [(round(at - (first_commit or 0), 3), round(s, 3)) for at, s in timed],
        "new_group_s": None
        if first_commit is None or first_seen is None
        else first_seen - first_commit,
        "error": source.error,
    }


def _warm_up(
    ctx: Context, mirror: RunningMirror, topic: str, target: str, producer: Producer, label: str
) -> dict[int, int]:
    """Trickle records until one is on the target: the mirror copies. Sequence numbers used."""
    partitions = ctx.settings.w5_partitions
    sent = dict.fromkeys(range(partitions), 0)
    with tqdm(desc=f"{label} start-up", unit="probe") as bar:
        while mirror.elapsed() < 300 and mirror.process.alive():
            for p in range(partitions):
                producer.produce(topic, value_for(p, sent[p], _PAD), partition=p)
                sent[p] += 1
            producer.flush(10)
            bar.update(1)
            if sum(ctx.dst.end_offsets([(target, p) for p in range(partitions)]).values()):
                return sent
            time.sleep(0.2)
    raise RuntimeError(f"{label} copied nothing in 300 s:\n{mirror.process.log_tail()}")


def _paced(
    producer: Producer, topic: str, sent: dict[int, int], rate: int, seconds: float, label: str
) -> dict[int, int]:
    """rate x seconds records, round robin over the partitions, on schedule."""
    total = int(rate * seconds)
    partitions = len(sent)
    started = time.monotonic()
    with tqdm(total=total, desc=f"{label} produce {rate}/s", unit="rec") as bar:
        for i in range(total):
            due = started + i / rate
            pause = due - time.monotonic()
            if pause > 0.002:
                time.sleep(pause)
            p = i % partitions
            producer.produce(topic, value_for(p, sent[p], _PAD), partition=p)
            sent[p] += 1
            producer.poll(0)
            bar.update(1)
    if producer.flush(60):
        raise RuntimeError(f"{label}: records left unsent after 60 s")
    return sent


def group_markdown(block: Any) -> list[str]:
    """W5's table: per system and variant, every commit, and the commits made once the group
    showed on the target (its first ones also wait for the group to be found)."""
    lines = [
        "W5 group offsets: seconds from a source commit to the target group at its exact "
        "translation (per commit and partition), and until a new group first shows on the "
        "target.",
        "",
        "| system | intervals | commits | p50 | p90 | p99 | max | reached | new group | target |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for system, res in block.items():
        for name, v in (res.get("variants") or {}).items():
            total = (v.get("reached") or 0) + (v.get("missed") or 0)
            for which, key in (("all", "latency"), ("once found", "found_latency")):
                lat = v.get(f"{key}_s") or {}
                hist = dict(v.get(f"{key}_hist") or [])
                met = ""
                if is_ours(system) and which == "once found":
                    ok = (lat.get("p50") or 99) <= 1 and (lat.get("p99") or 99) <= 2
                    ok = ok and v.get("new_group_s") is not None and v["new_group_s"] <= 5
                    met = "p50 <= 1, p99 <= 2, new <= 5: " + ("yes" if ok else "**no**")
                reached = f"{v.get('reached')} of {total}" if which == "all" else ""
                lines.append(
                    f"| {LABELS[system]} | {name} | {which} | {_s(lat.get('p50'))} "
                    f"| {_s(hist.get(90.0))} | {_s(lat.get('p99'))} | {_s(lat.get('max'))} "
                    f"| {reached} | {_s(v.get('new_group_s'))} | {met} |"
                )
    return [*lines, ""]


def _s(value: float | None) -> str:
    return "not in run" if value is None else f"{value:.2f}"
