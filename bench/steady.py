"""W2 steady: records produced at a fixed rate; replication latency read on the target.

The remote topic is created beforehand with message.timestamp.type=LogAppendTime (both systems
leave an existing remote topic as it is and never copy that setting), so every record on the
target carries the time the target appended it. The source timestamp travels in a header, set
to the record's own CreateTime by the producer; append latency = target append time - that
header. That is when a read_uncommitted reader can see the record. The committed latency is when
a read_committed reader gets it (bench.committed): with exactly-once, once its transaction
commits on the target.
"""

from __future__ import annotations

import time
from typing import Any

from confluent_kafka import Producer
from tqdm import tqdm

from bench.committed import CommittedReader
from bench.context import Context, RunningMirror, finish, remote
from bench.data import RecordShape, producer_config, record
from bench.stats import latency_summary, percentile_curve
from bench.systems import LABELS, SystemName
from bench.verify import compare, read_topic

__all__ = ["SOURCE_TS", "run_steady"]

SOURCE_TS = "bench-source-ts"
_WARM = "bench-warm-up"


def _warm_up(
    ctx: Context, mirror: RunningMirror, topic: str, producer: Producer, shape: RecordShape
) -> int:
    """Trickle records until one is on the target: the mirror is running. How many were sent."""
    s = ctx.settings
    pool = shape.pool()
    target = [(remote(topic), p) for p in range(s.w2_partitions)]
    sent = 0
    with tqdm(desc=f"W2 {LABELS[mirror.process.system]} start-up", unit="probe") as bar:
        while mirror.elapsed() < 300 and mirror.process.alive():
            key, value = record(sent, pool, shape.schema_id)
            producer.produce(
                topic,
                key=key,
                value=value,
                partition=sent % s.w2_partitions,
                headers=[(_WARM, b"1")],
            )
            producer.flush(10)
            sent += 1
            bar.update(1)
            if sum(ctx.dst.end_offsets(target).values()) > 0:
                return sent
            time.sleep(0.2)
    raise RuntimeError(
        f"{mirror.process.system} copied nothing in 300 s:\n{mirror.process.log_tail()}"
    )


def _paced(
    ctx: Context, topic: str, producer: Producer, first: int, shape: RecordShape
) -> tuple[int, float]:
    """Produce rate x seconds records on schedule; (records, seconds it really took)."""
    s = ctx.settings
    total = int(s.w2_rate * s.w2_seconds)
    pool = shape.pool()
    sent = 0
    started = time.monotonic()
    with tqdm(total=total, desc=f"W2 produce {s.w2_rate}/s", unit="rec") as bar:
        while sent < total:
            due = min(total, int((time.monotonic() - started) * s.w2_rate) + 1)
            burst = due - sent
            while sent < due:
                i = first + sent
                key, value = record(i, pool, shape.schema_id)
                now_ms = int(time.time() * 1000)
                try:
                    producer.produce(
                        topic,
                        key=key,
                        value=value,
                        partition=i % s.w2_partitions,
                        timestamp=now_ms,
                        headers=[(SOURCE_TS, now_ms.to_bytes(8, "big"))],
                    )
                except BufferError:
                    producer.poll(0.01)
                    continue
                sent += 1
            producer.poll(0)
            bar.update(burst)
            time.sleep(0.002)
    producer.flush(60)
    return sent, time.monotonic() - started


def run_steady(ctx: Context, system: SystemName) -> dict[str, Any]:
    s = ctx.settings
    topic = ctx.topic("w2", system)
    target = remote(topic)
    label = LABELS[system]
    ctx.src.create_topics([topic], s.w2_partitions)
    shape = RecordShape(s.w2_record_bytes, seed=11, schema_id=ctx.value_schema(topic))
    ctx.dst.create_topics([target], s.w2_partitions, {"message.timestamp.type": "LogAppendTime"})
    with ctx.launch("w2", system, topic) as mirror:
        producer = Producer(producer_config(ctx.primary, **{"linger.ms": 1}))
        result: dict[str, Any] = {"topic": topic}
        warm = _warm_up(ctx, mirror, topic, producer, shape)
        partitions = [(target, p) for p in range(s.w2_partitions)]
        ends = ctx.dst.end_offsets(partitions)
        starts = {p: ends.get((t, p)) for t, p in partitions}
        with CommittedReader(ctx.backup, target, starts, SOURCE_TS) as committed:
            measured_from = mirror.sampler.use()
            sent, seconds = _paced(ctx, topic, producer, warm, shape)
            total = warm + sent
            drain_timeout = mirror.elapsed() + 120
            _, reached = ctx.wait_arrivals(
                mirror, partitions, total, timeout_s=drain_timeout, desc=f"W2 {label} drained"
            )
            use = mirror.sampler.stop()
            committed_lat = committed.finish(sent, mirror.started + drain_timeout)
        cpu = use.cpu_seconds - measured_from.cpu_seconds
        result.update(
            records=sent,
            warm_up_records=warm,
            produce_s=seconds,
            produced_per_s=sent / seconds if seconds > 0 else None,
            reached=reached,
            peak_rss_bytes=use.peak_rss_bytes,
            peak_pss_bytes=use.peak_pss_bytes,
            cpu_s=cpu,
            cpu_s_per_m=cpu * 1e6 / sent if sent else None,
            cpu_s_by_thread={k: round(v, 2) for k, v in use.threads_since(measured_from).items()},
        )
        with tqdm(total=2 * total, desc=f"W2 {label} verify", unit="rec") as bar:
            source = read_topic(
                ctx.primary, topic, s.w2_partitions, timestamps=False, progress=bar.update
            )
            mirrored = read_topic(
                ctx.backup,
                target,
                s.w2_partitions,
                timestamps=False,
                latency_header=SOURCE_TS,
                progress=bar.update,
                value_map=ctx.ids_back(system, topic, shape.schema_id),
            )
        verdict = compare({topic: source.partitions}, {topic: mirrored.partitions})
        result["verify"] = verdict.__dict__ | {"problems": list(verdict.problems[:20])}
        # Append latency (read_uncommitted): the keys and their meaning are as they always were.
        result["latency_ms"] = latency_summary(mirrored.latencies_ms)
        result["latency_hist"] = percentile_curve(mirrored.latencies_ms)
        # Committed latency (read_committed): the reader's receive time - the source timestamp.
        result["committed_latency_ms"] = latency_summary(committed_lat)
        result["committed_latency_hist"] = percentile_curve(committed_lat)
        result["committed_latency_error"] = committed.error
        if committed.error is not None:
            tqdm.write(f"W2 {label} read_committed reader failed: {committed.error}")
        result.update(finish(mirror))
    ctx.src.delete_topics([topic])
    ctx.dst.delete_topics([target])
    return result
