"""What every workload shares: the clusters, admin clients, the mirrors' launcher, arrival polls."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from bench.apache import ApacheJars
from bench.avro import Registries, ValueMap, ids_back
from bench.data import Admin
from bench.resources import ResourceSampler
from bench.settings import Settings
from bench.systems import (
    LABELS,
    SCHEMAS,
    MirrorProcess,
    SystemName,
    is_ours,
    mirror_properties,
    start_mirror,
)

__all__ = ["Context", "RunningMirror", "remote"]

POLL_S = 0.25


def remote(topic: str) -> str:
    """The target name both systems give a source topic (DefaultReplicationPolicy)."""
    return f"primary.{topic}"


@dataclass
class RunningMirror:
    process: MirrorProcess
    sampler: ResourceSampler
    started: float = field(default_factory=time.monotonic)

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def __enter__(self) -> RunningMirror:
        return self

    def __exit__(self, *exc: object) -> None:
        self.sampler.stop()
        self.process.stop()  # a second stop after finish() is a no-op


@dataclass
class Context:
    settings: Settings
    primary: str
    backup: str
    workdir: Path
    run_id: str
    apache: ApacheJars | None
    registries: Registries | None = None  # with --avro
    # Where the mirrors (and the ceiling's copiers) reach the source: `primary`, or across the
    # link with --link (bench.link); the bench's own clients use `primary`.
    source_for_mirrors: str = ""
    src: Admin = field(init=False)
    dst: Admin = field(init=False)

    def __post_init__(self) -> None:
        self.source_for_mirrors = self.source_for_mirrors or self.primary
        self.src = Admin(self.primary)
        self.dst = Admin(self.backup)

    def close(self) -> None:
        """Let go of the admin clients, before the clusters stop."""
        self.src.close()
        self.dst.close()

    def topic(self, workload: str, system: SystemName, suffix: str = "") -> str:
        return f"{workload}-{system}-{self.run_id}{suffix}"

    def launch(
        self,
        workload: str,
        system: SystemName,
        topics: str,
        *,
        extra: Mapping[str, str] | None = None,
    ) -> RunningMirror:
        """Start one system mirroring the topics regex, with the resource sampler on its tree;
        `extra` keys are added to both systems' file alike (--mm2-property keys to ours only)."""
        workdir = self.workdir / f"{workload}-{system}"
        if system == SCHEMAS:
            if self.registries is None:
                raise RuntimeError(f"{SCHEMAS} needs the registries of --avro")
            extra = {**self.registries.mirror_properties(), **(extra or {})}
        if is_ours(system) and self.settings.mm2_properties:
            extra = {**(extra or {}), **dict(self.settings.mm2_properties)}
        text = mirror_properties(
            system,
            primary=self.source_for_mirrors,
            backup=self.backup,
            topics=topics,
            tasks_max=self.settings.tasks_max,
            state_dir=workdir / "state",
            extra=extra,
        )
        classpath = self.apache.classpath if self.apache is not None else ()
        process = start_mirror(system, text, workdir, apache_classpath=classpath)
        return RunningMirror(process, ResourceSampler(process.pid).start())

    def value_schema(self, topic: str) -> int | None:
        """With --avro, the source registry's ID of the topic's value schema (registered now);
        otherwise None (values of raw bytes)."""
        if self.registries is None:
            return None
        return self.registries.register_value_schema(topic)

    def ids_back(self, system: SystemName, topic: str, schema_id: int | None) -> ValueMap | None:
        """How the verifier reads the target's values of a system that translates IDs: the
        target registry's ID of the mirrored subject put back to the source's (bench.avro)."""
        if system != SCHEMAS or self.registries is None or schema_id is None:
            return None
        return ids_back(schema_id, self.registries.target_id(remote(topic)))

    def wait_arrivals(
        self,
        mirror: RunningMirror,
        partitions: Iterable[tuple[str, int]],
        total: int,
        *,
        timeout_s: float,
        desc: str,
        progress_total: int | None = None,
        done: Callable[[dict[tuple[str, int], int]], bool] | None = None,
        poll_s: float = POLL_S,
    ) -> tuple[list[tuple[float, int]], bool]:
        """Poll the target's end offsets until total records are there: (curve, reached)."""
        wanted = list(partitions)
        curve: list[tuple[float, int]] = []
        goal = progress_total or total
        with tqdm(total=goal, desc=desc, unit="rec", leave=True) as bar:
            while mirror.elapsed() < timeout_s:
                ends = self.dst.end_offsets(wanted)
                arrived = sum(ends.values())
                curve.append((mirror.elapsed(), arrived))
                bar.update(max(0, min(arrived, goal) - bar.n))
                if arrived >= total and (done is None or done(ends)):
                    return curve, True
                if not mirror.process.alive():
                    tqdm.write(
                        f"{LABELS[mirror.process.system]} exited with "
                        f"{mirror.process.popen.returncode}:\n{mirror.process.log_tail()}"
                    )
                    return curve, False
                time.sleep(poll_s)
        return curve, False


def finish(mirror: RunningMirror) -> dict[str, Any]:
    """Stop the system; its exit code and where its log is."""
    code = mirror.process.stop()
    return {"exit_code": code, "log": str(mirror.process.log_path)}
