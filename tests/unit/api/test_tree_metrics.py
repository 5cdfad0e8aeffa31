"""The process tree's memory and CPU, and the flows' heartbeats and checkpoint passes, as
Prometheus metrics."""

from __future__ import annotations

import subprocess
import sys
import time

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from mm2.api.liveness_metrics import LivenessCollector
from mm2.api.process_metrics import ProcessTreeCollector
from mm2.runtime.liveness import Liveness


def _samples(collector: object) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    registry = CollectorRegistry()
    registry.register(collector)  # type: ignore[arg-type]
    text = generate_latest(registry).decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def _value(
    samples: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, role: str
) -> float:
    return samples[(name, (("role", role),))]


def test_the_tree_counts_children_and_keeps_the_cpu_of_those_that_ended() -> None:
    collector = ProcessTreeCollector()
    burn = "import time\nend = time.process_time() + 0.3\nwhile time.process_time() < end: pass\n"
    child = subprocess.Popen([sys.executable, "-c", burn + "time.sleep(60)"])
    try:
        deadline = time.monotonic() + 60
        while True:  # until the child has burnt its CPU (the machine may be busy)
            samples = _samples(collector)
            used = _value(samples, "mm2_process_tree_cpu_seconds_total", "other")
            if used >= 0.25 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert used >= 0.25
        assert _value(samples, "mm2_process_tree_processes", "mirror") == 1
        assert _value(samples, "mm2_process_tree_processes", "other") >= 1
        assert _value(samples, "mm2_process_tree_resident_memory_bytes", "mirror") > 10e6
        assert _value(samples, "mm2_process_tree_resident_memory_bytes", "other") > 1e6
    finally:
        child.kill()
        child.wait()
    after = _samples(collector)
    assert _value(after, "mm2_process_tree_cpu_seconds_total", "other") >= used
    assert _value(after, "mm2_process_tree_processes", "other") == 0


def test_heartbeats_and_checkpoint_passes_per_flow() -> None:
    liveness = Liveness()
    liveness.heartbeat("primary", "backup", 1000.0)
    liveness.heartbeat("primary", "backup", 1001.0)
    liveness.checkpoint_pass("primary", "backup", 1002.5)
    liveness.heartbeat("backup", "primary", 999.0)
    samples = _samples(LivenessCollector(liveness))
    flow = (("source", "primary"), ("target", "backup"))
    assert samples[("mm2_heartbeat_count_total", flow)] == 2
    assert samples[("mm2_heartbeat_last_timestamp_seconds", flow)] == 1001.0
    assert samples[("mm2_checkpoint_pass_count_total", flow)] == 1
    assert samples[("mm2_checkpoint_last_pass_timestamp_seconds", flow)] == 1002.5
    other = (("source", "backup"), ("target", "primary"))
    assert ("mm2_checkpoint_last_pass_timestamp_seconds", other) not in samples
