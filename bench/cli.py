"""`python -m bench`: start the clusters, run each workload through each system, write results."""

from __future__ import annotations

import platform
import shlex
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import psutil
from tqdm import tqdm

from bench.apache import resolve_apache_mm2
from bench.avro import Registries
from bench.backlog import run_backlog, run_ceiling
from bench.breadth import run_breadth
from bench.clusters import (
    ClusterPairs,
    partitions_per_broker,
    raise_open_files_limit,
    wants_fresh_pairs,
)
from bench.context import Context
from bench.groups import run_groups
from bench.mesh import run_mesh
from bench.orders import orders_markdown, reversed_run
from bench.report import markdown, write_results
from bench.settings import Settings, parse_args
from bench.steady import run_steady
from bench.systems import LABELS, SystemName, is_ours
from mm2.localcluster import KAFKA_VERSION, find_java

__all__ = ["machine", "main"]

Runner = Callable[[Context, SystemName], dict[str, Any]]
RUNNERS: dict[str, Runner] = {
    "w1": run_backlog,
    "w2": run_steady,
    "w3": run_breadth,
    "w5": run_groups,
}


def machine() -> dict[str, Any]:
    """Cores, RAM, CPU model, Java and Python versions: what BENCHMARKS.md describes."""
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        model = platform.processor()
    java = find_java()
    version = subprocess.run(
        [str(java.executable), "-version"], capture_output=True, text=True, check=False
    ).stderr.splitlines()
    return {
        "cpu_model": model,
        "cores": psutil.cpu_count(logical=True),
        "ram_gib": round(psutil.virtual_memory().total / 2**30, 1),
        "os": platform.platform(),
        "java": version[0] if version else str(java),
        "python": platform.python_version(),
        "kafka_brokers": KAFKA_VERSION,
    }


def _attempt(run: Callable[[], dict[str, Any]], system: SystemName) -> dict[str, Any]:
    """One system's run of a workload; an exception (a fill that timed out, a broker that went
    away) is that system's failed result, so the other systems still run and are reported."""
    try:
        return run()
    except Exception as exc:  # noqa: BLE001 - any failure of one system's run is reported
        tqdm.write(f"{LABELS[system]} failed: {exc!r}")
        return {"error": repr(exc), "verify": {"ok": False, "problems": []}}


def _run(settings: Settings, workdir: Path, command: str) -> dict[str, Any]:
    apache = resolve_apache_mm2() if not all(map(is_ours, settings.systems)) else None
    results: dict[str, Any] = {
        "meta": {
            "command": command,
            "label": settings.label,
            "started": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
            "machine": machine(),
            "apache_mm2_version": None if apache is None else apache.version,
            "apache_mm2_note": None if apache is None else apache.note,
            "settings": {k: str(v) for k, v in vars(settings).items()},
        }
    }
    soft, hard = raise_open_files_limit()
    results["meta"]["clusters"] = {"open_files_limit": soft, "pairs": []}
    for workload in settings.workloads:
        need = partitions_per_broker(settings, workload)
        if need > soft * 0.9:
            tqdm.write(
                f"warning: {workload.upper()} puts ~{need} partitions on one broker, and a "
                f"broker keeps a file open per partition: ulimit -n is {soft} (hard {hard})"
            )
    registries = Registries(workdir) if settings.avro else None
    pairs = ClusterPairs(settings, workdir, uuid.uuid4().hex[:6], apache, registries)
    try:
        if registries is not None:
            tqdm.write("starting two Apicurio registries (source, target)...")
            registries.start()
        for workload in settings.workloads:
            fresh = wants_fresh_pairs(settings, workload)
            block: dict[str, Any] = {}
            results[workload] = block
            if workload == "w7":  # four clusters of its own per system, one set at a time
                pairs.close()
                for system in settings.systems:
                    tqdm.write(f"W7: {LABELS[system]}")
                    block[system] = _attempt(
                        partial(run_mesh, settings, workdir, apache, system), system
                    )
                continue
            if workload == "w1":
                with pairs.pair("w1-ceiling", fresh) as ctx:
                    tqdm.write("measuring the ceiling: plain consumer and plain producer")
                    results["ceiling"] = run_ceiling(ctx)
            for system in settings.systems:
                with pairs.pair(f"{workload}-{system}", fresh) as ctx:
                    tqdm.write(f"{workload.upper()}: {LABELS[system]}")
                    run = partial(RUNNERS[workload], ctx, system)
                    block[system] = _attempt(run, system)
                    block[system]["fresh_clusters"] = fresh
    finally:
        pairs.close()
        if registries is not None:
            registries.close()
    results["meta"]["clusters"]["pairs"] = pairs.started
    results["meta"]["finished"] = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    return results


def _one_run(settings: Settings, command: str) -> dict[str, Any]:
    """The clusters, every workload through every system, the results written and printed."""
    started = time.monotonic()
    if settings.workdir is None:
        with tempfile.TemporaryDirectory(prefix="mm2-bench-") as tmp:
            results = _run(settings, Path(tmp), command)
    else:
        settings.workdir.mkdir(parents=True, exist_ok=True)
        results = _run(settings, settings.workdir.resolve(), command)
    results["meta"]["wall_s"] = round(time.monotonic() - started, 1)
    written = write_results(results, settings.out / settings.label)
    print()
    print(markdown(results))
    print("written: " + ", ".join(str(p) for p in written))
    return results


def _failed(results: Mapping[str, Any], label: str) -> list[str]:
    return [
        f"{label}: {w} {s}"
        for w in ("w1", "w2", "w3", "w5", "w7")
        for s, r in (results.get(w) or {}).items()
        if not r.get("verify", {}).get("ok")
    ]


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    # SIGTERM unwinds like Ctrl-C, so the mirrors and the clusters are stopped on the way out.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    settings = parse_args(args)
    command = shlex.join(["python", "-m", "bench", *args])
    first = _one_run(settings, command)
    failed = _failed(first, settings.label)
    if settings.both_orders:
        again = reversed_run(settings)
        tqdm.write(f"both orders: the run again, systems {','.join(again.systems)}")
        second = _one_run(again, command)
        failed += _failed(second, again.label)
        table = orders_markdown(settings.systems, first, second)
        path = settings.out / settings.label / "orders.md"
        path.write_text(table, encoding="utf-8")
        print()
        print(table)
        print(f"written: {path}")
    if failed:
        print("correctness FAILED for: " + ", ".join(failed), file=sys.stderr)
        return 1
    return 0
