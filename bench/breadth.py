"""W3 breadth: many small topics mirrored; then a new topic and a config change, timed."""

from __future__ import annotations

import time
from typing import Any

from confluent_kafka import Producer
from tqdm import tqdm

from bench.context import POLL_S, Context, RunningMirror, finish, remote
from bench.data import RecordShape, fill, producer_config
from bench.systems import LABELS, SystemName
from bench.verify import compare, read_topics

__all__ = ["CHANGED_CONFIG", "arrival_poll_s", "run_breadth"]

CHANGED_CONFIG = "retention.ms"
# Each poll of the target asks for every partition's end offset; at 10,000 partitions four
# times a second that is load of its own on a 2-core machine, so large runs poll once a second.
LARGE_POLL_S = 1.0
LARGE_PARTITIONS = 5_000


def arrival_poll_s(partitions: int) -> float:
    """How often W3 polls the target's end offsets while the initial mirror runs."""
    return POLL_S if partitions < LARGE_PARTITIONS else LARGE_POLL_S


def _fill_all(ctx: Context, topics: list[str], label: str) -> None:
    s = ctx.settings
    shape = RecordShape(128, seed=3)
    total = len(topics) * s.w3_records_per_topic
    with tqdm(total=total, desc=f"W3 fill for {label}", unit="rec") as bar:
        fill(
            ctx.primary,
            topics,
            s.w3_partitions,
            s.w3_records_per_topic,
            shape,
            progress=bar.update,
        )


def _expected(ctx: Context, topics: list[str]) -> dict[tuple[str, int], int]:
    s = ctx.settings
    ends = ctx.src.end_offsets((t, p) for t in topics for p in range(s.w3_partitions))
    return {(remote(t), p): n for (t, p), n in ends.items()}


def _changes(ctx: Context, mirror: RunningMirror, topic: str, new: str) -> dict[str, Any]:
    """Create a topic (and produce one record) and change a config at once; time both."""
    s = ctx.settings
    value = str(7 * 24 * 3600 * 1000 + int(time.time()) % 100_000)  # a value nobody set before
    started = time.monotonic()
    ctx.src.create_topics([new], s.w3_partitions)
    producer = Producer(producer_config(ctx.primary))
    producer.produce(new, key=b"new", value=b"first", partition=0)
    producer.flush(30)
    changed_at = time.monotonic()
    ctx.src.set_topic_config(topic, CHANGED_CONFIG, value)
    new_topic_s: float | None = None
    config_s: float | None = None
    with tqdm(total=2, desc=f"W3 {LABELS[mirror.process.system]} new topic + config") as bar:
        while time.monotonic() - started < s.w3_wait_s and mirror.process.alive():
            if new_topic_s is None and ctx.dst.end_offsets([(remote(new), 0)]).get(
                (remote(new), 0), 0
            ):
                new_topic_s = time.monotonic() - started
                bar.update(1)
            if (
                config_s is None
                and ctx.dst.topic_config(remote(topic)).get(CHANGED_CONFIG) == value
            ):
                config_s = time.monotonic() - changed_at
                bar.update(1)
            if new_topic_s is not None and config_s is not None:
                break
            time.sleep(POLL_S)
    return {
        "new_topic_s": new_topic_s,
        "config_change_s": config_s,
        "wait_bound_s": s.w3_wait_s,
        "new_topic_timed_out": new_topic_s is None,
        "config_change_timed_out": config_s is None,
    }


def run_breadth(ctx: Context, system: SystemName) -> dict[str, Any]:
    s = ctx.settings
    label = LABELS[system]
    topics = [ctx.topic("w3", system, f"-{i:04d}") for i in range(s.w3_topics)]
    new = ctx.topic("w3", system, "-new")
    ctx.src.create_topics(topics, s.w3_partitions)
    _fill_all(ctx, topics, label)
    expected = _expected(ctx, topics)
    total = sum(expected.values())
    with ctx.launch("w3", system, ctx.topic("w3", system, "-.*")) as mirror:
        curve, reached = ctx.wait_arrivals(
            mirror,
            expected,
            total,
            timeout_s=s.w3_timeout_s,
            desc=f"W3 {label} {s.w3_topics} topics",
            done=lambda ends: all(ends.get(k, 0) >= n for k, n in expected.items()),
            poll_s=arrival_poll_s(len(expected)),
        )
        result: dict[str, Any] = {
            "topics": s.w3_topics,
            "partitions": s.w3_topics * s.w3_partitions,
            "records": total,
            "reached": reached,
            "mirrored_s": curve[-1][0] if reached else None,
            "curve": curve,
        }
        if reached:
            result.update(_changes(ctx, mirror, topics[0], new))
        use = mirror.sampler.stop()
        result["peak_rss_bytes"] = use.peak_rss_bytes
        result["rss_per_partition_bytes"] = use.peak_rss_bytes / result["partitions"]
        result["cpu_s"] = use.cpu_seconds
        checked = [*topics, new] if result.get("new_topic_s") is not None else topics
        with tqdm(total=2 * (total + len(checked) - len(topics)), desc=f"W3 {label} verify") as bar:
            source = read_topics(
                ctx.primary, dict.fromkeys(checked, s.w3_partitions), progress=bar.update
            )
            target = read_topics(
                ctx.backup, {remote(t): s.w3_partitions for t in checked}, progress=bar.update
            )
        verdict = compare(source.topics, {t: target.topics[remote(t)] for t in checked})
        result["verify"] = verdict.__dict__ | {"problems": list(verdict.problems[:20])}
        result.update(finish(mirror))
    ctx.src.delete_topics([*topics, new])
    ctx.dst.delete_topics([remote(t) for t in [*topics, new]])
    return result
