"""The bench's Kafka cluster pairs: one pair shared by the whole run, or a fresh pair per system.

A single broker holds every partition of its cluster. At W3's default size (200 x 10) both
systems share one pair, one after the other. At 10,000 partitions that does not work: after
the first system the brokers still hold its topics and remote topics (deletion is asynchronous,
and a deleted partition keeps its files open for `file.delete.delay.ms`), so the second system's
fill ran against brokers with ~30,000 partitions and its writes timed out. From
FRESH_W3_PARTITIONS partitions on (or with `--fresh-clusters`, for any workload) each system
gets a pair of its own: started for it, stopped and deleted after it, so only one pair runs at
a time and both systems meet the same empty brokers.

What a broker needs per partition, and what the bench gives it there:

- one open file per log segment (the index files are memory-mapped and closed), so a broker
  with N partitions holds about N descriptors; `raise_open_files_limit()` lifts the soft
  `ulimit -n` to the hard one for the brokers the bench starts;
- two memory maps per partition (offset and time index of the active segment), against
  `vm.max_map_count` (65,530 by default);
- heap for the partition and log objects: BIG_BROKER_JVM gives fresh pairs 2 GiB instead of
  the launcher's 512 MiB.
"""

from __future__ import annotations

import contextlib
import resource
import shutil
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from tqdm import tqdm

from bench.apache import ApacheJars
from bench.avro import Registries
from bench.context import Context
from bench.link import LINK_LISTENER, LinkProxy, reserved_port
from bench.settings import Settings
from bench.warmup import warm_up
from mm2.localcluster import SERVER_JVM_OPTIONS, LocalCluster, LocalClusters

__all__ = [
    "BIG_BROKER_JVM",
    "BROKER_CONFIG",
    "FRESH_W3_PARTITIONS",
    "ClusterPairs",
    "broker_jvm",
    "partitions_per_broker",
    "raise_open_files_limit",
    "wants_fresh_pairs",
]

# Every topic the bench makes is created explicitly, with its partition count.
BROKER_CONFIG = {"num.partitions": "1", "auto.create.topics.enable": "false"}
# W3 with at least this many partitions runs each system on a pair of its own.
FRESH_W3_PARTITIONS = 5_000
BIG_BROKER_JVM: tuple[str, ...] = tuple(
    "-Xmx2g" if o.startswith("-Xmx") else "-Xms512m" if o.startswith("-Xms") else o
    for o in SERVER_JVM_OPTIONS
)
# Partitions a broker holds besides the workload's: __consumer_offsets (50), the mirrors'
# offsets, status and config topics, heartbeats, checkpoints, offset syncs.
_INTERNAL_PARTITIONS = 120


def wants_fresh_pairs(settings: Settings, workload: str) -> bool:
    """Whether each system runs this workload on a cluster pair of its own. W1 always does: on
    a shared pair the system that ran second copied the backlog up to 1.26x faster, whichever
    it was; on fresh pairs both orders came within 0.3 % (bench/results/LOG.md, "Both orders")."""
    if settings.fresh_clusters or workload == "w1":
        return True
    return workload == "w3" and settings.w3_topics * settings.w3_partitions >= FRESH_W3_PARTITIONS


def broker_jvm(fresh: bool) -> tuple[str, ...]:
    """The brokers' JVM flags, HotSpot's full JIT as a long-running broker has: the launcher's
    heap for the shared pair (the small runs stay as they were), 2 GiB for a fresh pair."""
    return BIG_BROKER_JVM if fresh else SERVER_JVM_OPTIONS


def partitions_per_broker(settings: Settings, workload: str) -> int:
    """About how many partitions the fuller broker (the target) holds during W3's run: each
    system's remote topics (all systems' when they share the pair) plus the internal topics."""
    if workload != "w3":
        return _INTERNAL_PARTITIONS
    sharing = 1 if wants_fresh_pairs(settings, workload) else len(settings.systems)
    return sharing * (settings.w3_topics + 1) * settings.w3_partitions + _INTERNAL_PARTITIONS


def raise_open_files_limit() -> tuple[int, int]:
    """Lift the soft open-files limit to the hard one (the brokers inherit it); (soft, hard)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        wanted = hard if hard != resource.RLIM_INFINITY else max(soft, 1_048_576)
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)


@dataclass
class ClusterPairs:
    """Hands out the Context a workload and system run in: the shared pair (started on first
    use) or a fresh pair. A fresh pair stops the shared one first, so one pair runs at a time."""

    settings: Settings
    workdir: Path
    run_id: str
    apache: ApacheJars | None
    registries: Registries | None = None  # with --avro, one pair for the whole run
    started: list[str] = field(default_factory=list)  # the pairs started, in order
    _shared: Context | None = None
    _shared_stack: ExitStack = field(default_factory=ExitStack)

    @contextlib.contextmanager
    def pair(self, tag: str, fresh: bool) -> Iterator[Context]:
        if not fresh:
            yield self._shared_context()
            return
        self.close()
        folder = self.workdir / f"clusters-{tag}"
        try:
            with self._start(folder, tag, fresh=True) as (clusters, source):
                if self.settings.warm_up_s > 0:
                    tqdm.write(f"warming the pair up for {self.settings.warm_up_s:.0f} s...")
                    pair = [clusters[n].bootstrap_servers for n in ("primary", "backup")]
                    warm_up(pair, self.settings.warm_up_s)
                ctx = self._context(clusters, source)
                try:
                    yield ctx
                finally:
                    ctx.close()  # before the brokers go, so no client calls a stopped broker
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def close(self) -> None:
        """Stop the shared pair, if it runs."""
        self._shared_stack.close()
        self._shared = None

    def _shared_context(self) -> Context:
        if self._shared is None:
            self._shared_stack = ExitStack()
            clusters, source = self._shared_stack.enter_context(
                self._start(self.workdir / "clusters", "shared", fresh=False)
            )
            self._shared = self._context(clusters, source)
            self._shared_stack.callback(self._shared.close)
        return self._shared

    @contextlib.contextmanager
    def _start(self, folder: Path, tag: str, *, fresh: bool) -> Iterator[tuple[LocalClusters, str]]:
        """The pair, started, and the source's address for the mirrors: the primary's own, or
        with --link the Toxiproxy port its LINK listener is advertised at (bench.link)."""
        which = f"a fresh pair for {tag}" if fresh else "one pair for the run"
        tqdm.write(f"starting two local Kafka clusters (primary, backup): {which}...")
        self.started.append(tag)
        timeout = 300.0 if fresh else 120.0
        link = self.settings.link
        if link is None:
            with LocalClusters(
                ["primary", "backup"],
                workdir=folder,
                broker_config=BROKER_CONFIG,
                jvm_options=broker_jvm(fresh),
                start_timeout=timeout,
            ) as clusters:
                yield clusters, clusters["primary"].bootstrap_servers
            return
        port = reserved_port()
        linked = {
            **BROKER_CONFIG,
            "listeners": f"PLAINTEXT://127.0.0.1:0,{LINK_LISTENER}://127.0.0.1:0,"
            "CONTROLLER://127.0.0.1:0",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:0,{LINK_LISTENER}://127.0.0.1:{port}",
        }
        pair = [
            LocalCluster(
                name,
                workdir=folder / name,
                broker_config=config,
                client_listener="PLAINTEXT",
                jvm_options=broker_jvm(fresh),
                start_timeout=timeout,
            )
            for name, config in (("primary", linked), ("backup", BROKER_CONFIG))
        ]
        with LocalClusters.of(pair) as clusters:
            upstream = clusters["primary"].listeners[LINK_LISTENER]
            with LinkProxy(link, port, upstream, folder) as proxy:
                tqdm.write(f"the mirrors reach the source at {proxy.listen}: {link}")
                yield clusters, proxy.listen

    def _context(self, clusters: LocalClusters, source: str) -> Context:
        return Context(
            self.settings,
            clusters["primary"].bootstrap_servers,
            clusters["backup"].bootstrap_servers,
            self.workdir,
            self.run_id,
            self.apache,
            self.registries,
            source_for_mirrors=source,
        )
