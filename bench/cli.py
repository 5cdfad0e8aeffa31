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
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import psutil
from tqdm import tqdm

from bench.apache import resolve_apache_mm2
from bench.backlog import run_backlog, run_ceiling
from bench.breadth import run_breadth
from bench.context import Context
from bench.report import markdown, write_results
from bench.settings import Settings, parse_args
from bench.steady import run_steady
from bench.systems import LABELS, SystemName
from mm2.localcluster import KAFKA_VERSION, LocalClusters, find_java

__all__ = ["machine", "main"]

Runner = Callable[[Context, SystemName], dict[str, Any]]
RUNNERS: dict[str, Runner] = {"w1": run_backlog, "w2": run_steady, "w3": run_breadth}
# Brokers get room for W3's thousands of partitions; everything else is the launcher's default.
BROKER_CONFIG = {"num.partitions": "1", "auto.create.topics.enable": "false"}


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


def _run(settings: Settings, workdir: Path, command: str) -> dict[str, Any]:
    apache = resolve_apache_mm2() if "apache" in settings.systems else None
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
    tqdm.write("starting two local Kafka clusters (primary, backup)...")
    with LocalClusters(
        ["primary", "backup"], workdir=workdir / "clusters", broker_config=BROKER_CONFIG
    ) as clusters:
        ctx = Context(
            settings,
            clusters["primary"].bootstrap_servers,
            clusters["backup"].bootstrap_servers,
            workdir,
            uuid.uuid4().hex[:6],
            apache,
        )
        for workload in settings.workloads:
            if workload == "w1":
                tqdm.write("measuring the ceiling: plain consumer and plain producer")
                results["ceiling"] = run_ceiling(ctx)
            block: dict[str, Any] = {}
            results[workload] = block
            for system in settings.systems:
                tqdm.write(f"{workload.upper()}: {LABELS[system]}")
                block[system] = RUNNERS[workload](ctx, system)
    results["meta"]["finished"] = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    return results


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    # SIGTERM unwinds like Ctrl-C, so the mirrors and the clusters are stopped on the way out.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    settings = parse_args(args)
    command = shlex.join(["python", "-m", "bench", *args])
    started = time.monotonic()
    if settings.workdir is None:
        with tempfile.TemporaryDirectory(prefix="mm2-bench-") as tmp:
            results = _run(settings, Path(tmp), command)
    else:
        settings.workdir.mkdir(parents=True, exist_ok=True)
        results = _run(settings, settings.workdir.resolve(), command)
    results["meta"]["wall_s"] = round(time.monotonic() - started, 1)
    folder = settings.out / settings.label
    written = write_results(results, folder)
    print()
    print(markdown(results))
    print("written: " + ", ".join(str(p) for p in written))
    failed = [
        f"{w} {s}"
        for w in ("w1", "w2", "w3")
        for s, r in (results.get(w) or {}).items()
        if not r.get("verify", {}).get("ok")
    ]
    if failed:
        print("correctness FAILED for: " + ", ".join(failed), file=sys.stderr)
        return 1
    return 0
