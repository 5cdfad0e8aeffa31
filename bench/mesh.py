"""W7 breadth of flows: four clusters, every one mirrored to every other (twelve flows in one
process), idle and then at a steady rate per flow; start-up, RSS and CPU of the whole tree.

Each system gets four fresh single-broker clusters, `dc1` to `dc4`, each with one local topic
`w7-<cluster>`. One mm2.properties enables all twelve flows `dcX->dcY` with `topics = w7-.*`
(a full match, so no remote topic is copied on: `dc1.w7-dc1` on dc2 is not `w7-.*`) and
`tasks.max = 1` (Apache's default): hub and spoke (dc1 with each other cluster) and three
active/active pairs in one file, the same file for both systems. The heartbeats topics travel
as both systems always copy them.

Phases, on one clock from the mirror's start:

1. start-up: a few records wait in every source topic; the mirror is up when every flow's
   remote topic holds them (start to every flow copying);
2. idle: nothing produced for `--w7-idle-seconds`; CPU over that window (as a share of one
   core) and RSS at its end;
3. load: `--w7-rate` records/s into each source topic, so each flow copies that rate, for
   `--w7-seconds`, then until every record is on every target: CPU per million records
   copied, peak RSS;
4. verify: every flow's remote topic against its source topic, counts and digests.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from itertools import permutations
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from tqdm import tqdm

from bench.apache import ApacheJars
from bench.clusters import BROKER_CONFIG
from bench.context import RunningMirror, finish
from bench.data import Admin, RecordShape, fill, produce, producer_config, record
from bench.resources import ResourceSampler, ResourceUse
from bench.settings import Settings
from bench.systems import (
    APACHE_EXACTLY_ONCE,
    AT_LEAST_ONCE,
    LABELS,
    ONE_REPLICA,
    SystemName,
    free_port,
    is_ours,
    start_mirror,
)
from bench.verify import PartitionDigest, compare, read_topics
from mm2.localcluster import SERVER_JVM_OPTIONS, LocalClusters

__all__ = ["CLUSTERS", "Flow", "flows", "mesh_properties", "run_mesh"]

CLUSTERS = ("dc1", "dc2", "dc3", "dc4")
# Records waiting in each source topic before the mirror starts, per partition.
_WAITING_PER_PARTITION = 5
_POLL_S = 0.5
_START_TIMEOUT_S = 600.0
_DRAIN_TIMEOUT_S = 300.0

Flow = tuple[str, str]  # (source cluster, target cluster)


def flows(clusters: Sequence[str] = CLUSTERS) -> list[Flow]:
    """Every ordered pair: twelve flows over four clusters."""
    return list(permutations(clusters, 2))


def local_topic(cluster: str) -> str:
    return f"w7-{cluster}"


def remote_topic(flow: Flow) -> str:
    """The name both systems give the flow's copy (DefaultReplicationPolicy)."""
    return f"{flow[0]}.{local_topic(flow[0])}"


def mesh_properties(
    system: SystemName,
    bootstrap: Mapping[str, str],
    state_dir: Path,
    extra: Mapping[str, str] | None = None,
) -> str:
    """One file for the twelve flows; per cluster the same client settings as W1 and W2."""
    names = list(bootstrap)
    lines = [f"clusters = {', '.join(names)}"]
    lines += [f"{name}.bootstrap.servers = {address}" for name, address in bootstrap.items()]
    lines += [f"{a}->{b}.enabled = true" for a, b in flows(names)]
    lines += ["topics = w7-.*", "tasks.max = 1", "sync.topic.acls.enabled = false"]
    lines += ONE_REPLICA.splitlines()
    for name in names:
        lines += [
            f"{name}.consumer.auto.offset.reset = earliest",
            f"{name}.producer.acks = all",
            f"{name}.producer.compression.type = none",
        ]
    if is_ours(system):
        lines.append(f"mm2.state.dir = {state_dir}")
    if system == AT_LEAST_ONCE:
        lines.append("exactly.once.source.support = disabled")
    if system == APACHE_EXACTLY_ONCE:
        lines += [f"{name}.exactly.once.source.support = enabled" for name in names]
        lines += [f"{name}.consumer.isolation.level = read_committed" for name in names]
        lines += ["dedicated.mode.enable.internal.rest = true"]
        lines += [f"listeners = http://127.0.0.1:{free_port()}"]
    lines += [f"{key} = {value}" for key, value in (extra or {}).items()]
    return "\n".join(lines) + "\n"


@contextmanager
def _clusters(workdir: Path) -> Iterator[dict[str, str]]:
    """Four empty clusters (a --workdir may hold an earlier run's), deleted after the run."""
    tqdm.write(f"W7: starting four local Kafka clusters ({', '.join(CLUSTERS)})...")
    shutil.rmtree(workdir, ignore_errors=True)
    try:
        with LocalClusters(
            list(CLUSTERS),
            workdir=workdir,
            broker_config=BROKER_CONFIG,
            start_timeout=300.0,
            jvm_options=SERVER_JVM_OPTIONS,
        ) as clusters:
            yield {name: clusters[name].bootstrap_servers for name in CLUSTERS}
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _remote_ends(admins: Mapping[str, Admin], partitions: int) -> dict[Flow, int]:
    """Each flow's remote topic: the sum of its partitions' end offsets on the target."""
    out: dict[Flow, int] = {}
    for flow in flows():
        topic = remote_topic(flow)
        ends = admins[flow[1]].end_offsets([(topic, p) for p in range(partitions)])
        out[flow] = sum(ends.values())
    return out


def _wait(
    mirror: RunningMirror,
    admins: Mapping[str, Admin],
    settings: Settings,
    wanted: int,
    deadline_s: float,
    desc: str,
) -> float | None:
    """Poll until every flow's remote topic ends at `wanted` or later; the mirror's elapsed
    seconds then, or None at the deadline or when the mirror exits. With exactly-once the end
    offset counts commit markers too, so this is a lower bound; the verify is exact."""
    with tqdm(total=len(flows()), desc=desc, unit="flow") as bar:
        while mirror.elapsed() < deadline_s and mirror.process.alive():
            ends = _remote_ends(admins, settings.w7_partitions)
            ready = sum(1 for end in ends.values() if end >= wanted)
            bar.update(ready - bar.n)
            if ready == len(ends):
                return mirror.elapsed()
            time.sleep(_POLL_S)
    if not mirror.process.alive():
        tqdm.write(f"{LABELS[mirror.process.system]} exited:\n{mirror.process.log_tail()}")
    return None


def _paced(bootstrap: Mapping[str, str], settings: Settings, first: int) -> tuple[int, float]:
    """w7_rate records/s into every source topic for w7_seconds; (records per topic, seconds)."""
    producers = {name: Producer(producer_config(address)) for name, address in bootstrap.items()}
    pool = RecordShape(settings.w7_record_bytes, seed=17).pool()
    per_topic = int(settings.w7_rate * settings.w7_seconds)
    sent = 0
    started = time.monotonic()
    with tqdm(total=per_topic, desc=f"W7 produce {settings.w7_rate}/s per flow", unit="rec") as bar:
        while sent < per_topic:
            due = min(per_topic, int((time.monotonic() - started) * settings.w7_rate) + 1)
            while sent < due:
                key, value = record(first + sent, pool)
                partition = (first + sent) % settings.w7_partitions
                for name, producer in producers.items():
                    produce(producer, local_topic(name), key, value, partition)
                sent += 1
            for producer in producers.values():
                producer.poll(0)
            bar.update(sent - bar.n)
            time.sleep(0.005)
    for name, producer in producers.items():
        if left := producer.flush(60):
            raise RuntimeError(f"W7: {left} records to {name} unsent")
    return sent, time.monotonic() - started


def _verify(bootstrap: Mapping[str, str], partitions: int, deadline: float) -> dict[str, Any]:
    """Every flow's copy against its source, counts and digests; read again while records are
    missing (the last transaction may still be committing) until the deadline."""
    sources = {
        name: read_topics(address, {local_topic(name): partitions}, timestamps=False).partitions
        for name, address in bootstrap.items()
    }
    while True:
        source: dict[str, Mapping[int, PartitionDigest]] = {}
        target: dict[str, Mapping[int, PartitionDigest]] = {}
        for flow in flows():
            name = f"{flow[0]}->{flow[1]}"
            source[name] = sources[flow[0]]
            topic = remote_topic(flow)
            read = read_topics(bootstrap[flow[1]], {topic: partitions}, timestamps=False)
            target[name] = read.topics.get(topic, {})
        verdict = compare(source, target)
        lost = any("lost" in problem for problem in verdict.problems)
        if verdict.ok or not lost or time.monotonic() > deadline:
            return verdict.__dict__ | {"problems": list(verdict.problems[:20])}
        time.sleep(5)


def _window(before: ResourceUse, after: ResourceUse, seconds: float) -> dict[str, Any]:
    cpu = after.cpu_seconds - before.cpu_seconds
    return {
        "seconds": round(seconds, 1),
        "cpu_s": round(cpu, 2),
        "cpu_core_pct": round(100 * cpu / seconds, 1) if seconds > 0 else None,
        "cpu_s_by_thread": {k: round(v, 2) for k, v in after.threads_since(before).items()},
    }


def run_mesh(
    settings: Settings,
    workdir: Path,
    apache: ApacheJars | None,
    system: SystemName,
) -> dict[str, Any]:
    """One system through W7 on four clusters of its own."""
    folder = workdir / f"w7-{system}"
    partitions = settings.w7_partitions
    waiting = _WAITING_PER_PARTITION * partitions
    shutil.rmtree(folder / "state", ignore_errors=True)
    with _clusters(folder / "clusters") as bootstrap:
        admins = {name: Admin(address) for name, address in bootstrap.items()}
        try:
            for name, admin in admins.items():
                admin.create_topics([local_topic(name)], partitions)
                fill(bootstrap[name], local_topic(name), partitions, waiting, RecordShape(64))
            extra = dict(settings.mm2_properties) if is_ours(system) else {}
            text = mesh_properties(system, bootstrap, folder / "state", extra)
            classpath = apache.classpath if apache is not None else ()
            process = start_mirror(system, text, folder / "mirror", apache_classpath=classpath)
            with RunningMirror(process, ResourceSampler(process.pid).start()) as mirror:
                return _measure(settings, bootstrap, admins, mirror, waiting)
        finally:
            for admin in admins.values():
                admin.close()


def _measure(
    settings: Settings,
    bootstrap: Mapping[str, str],
    admins: Mapping[str, Admin],
    mirror: RunningMirror,
    waiting: int,
) -> dict[str, Any]:
    label = LABELS[mirror.process.system]
    result: dict[str, Any] = {"flows": len(flows()), "partitions": settings.w7_partitions}
    up = _wait(mirror, admins, settings, waiting, _START_TIMEOUT_S, f"W7 {label} start-up")
    result["start_s"] = up
    if up is None:
        result["verify"] = {"ok": False, "problems": ["not every flow started"]}
        return result | finish(mirror)
    idle_s = settings.w7_idle_seconds
    tqdm.write(f"W7 {label}: every flow copying after {up:.1f} s; idle for {idle_s} s")
    before = mirror.sampler.use()
    time.sleep(idle_s)
    idle = mirror.sampler.use()
    result["idle"] = _window(before, idle, idle_s) | {
        "rss_bytes": idle.rss_bytes,
        "pss_bytes": idle.pss_bytes,
    }
    loaded_from = time.monotonic()
    per_topic, produce_s = _paced(bootstrap, settings, waiting)
    drained = _wait(
        mirror,
        admins,
        settings,
        waiting + per_topic,
        mirror.elapsed() + _DRAIN_TIMEOUT_S,
        f"W7 {label} drained",
    )
    use = mirror.sampler.stop()
    copied = per_topic * len(flows())
    load = _window(idle, use, time.monotonic() - loaded_from)
    load |= {
        "records_per_flow": per_topic,
        "produce_s": round(produce_s, 1),
        "copied": copied,
        "drained": drained is not None,
        "cpu_s_per_m": round(load["cpu_s"] * 1e6 / copied, 1) if copied else None,
    }
    result["load"] = load
    result["peak_rss_bytes"] = use.peak_rss_bytes
    result["peak_pss_bytes"] = use.peak_pss_bytes
    result["verify"] = _verify(
        bootstrap, settings.w7_partitions, time.monotonic() + (60 if drained else 5)
    )
    return result | finish(mirror)
