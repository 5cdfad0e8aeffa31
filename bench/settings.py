"""Workload sizes and switches: the full run's defaults, the quick preset, and the flags."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import cast

from bench.link import Link, parse_link
from bench.systems import ALL_SYSTEMS, SCHEMAS, SYSTEMS, SystemName

__all__ = ["ALL_WORKLOADS", "QUICK", "WORKLOADS", "Settings", "parse_args"]

WORKLOADS = ("w1", "w2", "w3", "w5")
# Run only when named (--workloads w7): four clusters per system (bench.mesh).
ALL_WORKLOADS = (*WORKLOADS, "w7")


@dataclass(frozen=True)
class Settings:
    label: str = "full"
    systems: tuple[SystemName, ...] = SYSTEMS
    workloads: tuple[str, ...] = WORKLOADS
    tasks_max: int = 4
    w1_records: int = 2_000_000
    w1_record_bytes: int = 1024
    w1_partitions: int = 8
    w1_timeout_s: float = 600.0
    w2_rate: int = 20_000
    w2_seconds: float = 60.0
    w2_record_bytes: int = 1024
    w2_partitions: int = 8
    w3_topics: int = 200
    w3_partitions: int = 10
    w3_records_per_topic: int = 100
    w3_timeout_s: float = 600.0
    w3_wait_s: float = 120.0  # bound on new-topic and config-change waits
    w5_rate: int = 1_000
    w5_seconds: float = 60.0
    w5_partitions: int = 4
    w5_settle_s: float = 30.0  # after the producer stops: the last commits get their chance
    w7_rate: int = 1_000  # per flow: into each of the four source topics
    w7_seconds: float = 60.0
    w7_idle_seconds: float = 60.0
    w7_record_bytes: int = 1024
    w7_partitions: int = 4
    avro: bool = False  # W1 and W2 values as Avro records, two registries (bench.avro)
    fresh_clusters: bool = False  # a cluster pair per system and workload (W1, W3 at scale: always)
    both_orders: bool = False  # the run again with the systems reversed (bench.orders)
    out: Path = Path("bench/results")
    workdir: Path | None = None
    # keys added to this project's mm2.properties only (--mm2-property), to measure a setting
    mm2_properties: tuple[tuple[str, str], ...] = ()
    # W6: the mirrors reach the source through Toxiproxy with this round trip and cap (bench.link)
    link: Link | None = None
    # seconds of the same plain and transactional traffic on a fresh pair before its mirror
    # starts (bench.warmup); 0: none
    warm_up_s: float = 0.0


QUICK = {
    "label": "quick",
    "w1_records": 200_000,
    "w1_timeout_s": 300.0,
    "w2_rate": 5_000,
    "w2_seconds": 15.0,
    "w3_topics": 20,
    "w3_wait_s": 30.0,
    "w3_timeout_s": 180.0,
    "w5_seconds": 20.0,
    "w7_seconds": 20.0,
    "w7_idle_seconds": 20.0,
}

_FLAGS = {
    "tasks_max": "tasks.max for both systems",
    "w1_records": "W1: records pre-filled on the source",
    "w1_record_bytes": "W1: value size in bytes",
    "w1_partitions": "W1: partitions of the backlog topic",
    "w1_timeout_s": "W1: give up after this many seconds",
    "w2_rate": "W2: records per second produced",
    "w2_seconds": "W2: seconds of producing",
    "w2_record_bytes": "W2: value size in bytes",
    "w2_partitions": "W2: partitions",
    "w3_topics": "W3: topics",
    "w3_partitions": "W3: partitions per topic",
    "w3_records_per_topic": "W3: backlog records per topic",
    "w3_timeout_s": "W3: give up on the initial mirror after this many seconds",
    "w3_wait_s": "W3: bound on the new-topic and config-change waits",
    "w5_rate": "W5: records per second produced while the source group commits",
    "w5_seconds": "W5: seconds of producing",
    "w5_partitions": "W5: partitions",
    "w5_settle_s": "W5: seconds left for the last commits to arrive after the producer stops",
    "w7_rate": "W7: records per second into each source topic (each flow copies this rate)",
    "w7_seconds": "W7: seconds of producing",
    "w7_idle_seconds": "W7: seconds of the idle window after start-up",
    "w7_record_bytes": "W7: value size in bytes",
    "w7_partitions": "W7: partitions of each source topic",
    "warm_up_s": "seconds of plain and transactional traffic on each cluster of a fresh pair "
    "before its mirror starts, the same for every system (default 0: none)",
}


def _csv(allowed: Sequence[str]) -> Callable[[str], tuple[str, ...]]:
    def parse(text: str) -> tuple[str, ...]:
        items = tuple(s.strip() for s in text.split(",") if s.strip())
        wrong = [s for s in items if s not in allowed]
        if wrong or not items:
            raise argparse.ArgumentTypeError(f"choose from {','.join(allowed)}, not {text!r}")
        return items

    return parse


def _link(text: str) -> Link:
    try:
        return parse_link(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _property(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"KEY=VALUE, not {text!r}")
    return key.strip(), value.strip()


def parse_args(argv: Sequence[str] | None = None) -> Settings:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description="This mirror and Apache Kafka's MirrorMaker 2 side by side on two local "
        "clusters: W1 backlog, W2 steady latency, W3 breadth, W4 resources, W5 group offsets, "
        "W6 across a link (--link), W7 twelve flows over four clusters.",
    )
    parser.add_argument("--quick", action="store_true", help="small sizes: a few minutes")
    parser.add_argument(
        "--systems",
        type=_csv(ALL_SYSTEMS),
        help="comma list, run in this order (default mm2,apache); mm2-at-least-once is mm2 "
        "with exactly.once.source.support = disabled, for the cost of exactly-once; "
        "apache-exactly-once is Apache MM2 with exactly-once enabled as its docs say",
    )
    parser.add_argument(
        "--workloads",
        type=_csv(ALL_WORKLOADS),
        help="comma list: w1,w2,w3,w5 by default; w7 (twelve flows over four clusters) when named",
    )
    parser.add_argument("--out", type=Path, help="results folder (default bench/results)")
    parser.add_argument("--label", help="sub-folder of --out (default quick or full)")
    parser.add_argument("--workdir", type=Path, help="clusters and mirror logs (default: temp)")
    parser.add_argument(
        "--fresh-clusters",
        action="store_true",
        default=None,
        help="start a fresh pair of clusters for each system in each workload, stopped and "
        "deleted after it (W1, and W3 with 5,000 partitions or more, always do)",
    )
    parser.add_argument(
        "--avro",
        action="store_true",
        default=None,
        help="W1 and W2 values as Avro records with a schema ID, two Apicurio registries beside "
        "the clusters (make apicurio); needed by the system mm2-schemas (mm2 translating the IDs)",
    )
    parser.add_argument(
        "--both-orders",
        action="store_true",
        default=None,
        help="run everything again with the systems in the reverse order, and write the two "
        "side by side (orders.md): what the order alone moves shows as such",
    )
    parser.add_argument(
        "--link",
        type=_link,
        metavar="RTT_MS[:MBIT]",
        help="W6: the mirrors reach the source through Toxiproxy, which adds this round trip "
        "and, with MBIT, caps each direction (e.g. 50, or 100:100); built with go install",
    )
    parser.add_argument(
        "--mm2-property",
        dest="mm2_properties",
        action="append",
        type=_property,
        metavar="KEY=VALUE",
        help="add KEY = VALUE to this project's mm2.properties only (repeatable), to measure "
        "a setting: e.g. transaction.boundary.interval.ms=25",
    )
    defaults = Settings()
    for f in fields(Settings):
        if f.name in _FLAGS:
            kind = type(getattr(defaults, f.name))
            parser.add_argument(
                "--" + f.name.replace("_", "-"), type=kind, help=_FLAGS[f.name], metavar="N"
            )
    args = vars(parser.parse_args(argv))
    settings = replace(defaults, **QUICK) if args.pop("quick") else defaults  # type: ignore[arg-type]
    chosen = {k: v for k, v in args.items() if v is not None}
    if "mm2_properties" in chosen:
        chosen["mm2_properties"] = tuple(chosen["mm2_properties"])
    if "systems" in chosen:
        chosen["systems"] = cast(tuple[SystemName, ...], chosen["systems"])
    out = replace(settings, **chosen)
    if SCHEMAS in out.systems and not out.avro:
        parser.error(f"--systems {SCHEMAS} mirrors Avro records: add --avro")
    if out.both_orders and len(out.systems) < 2:
        parser.error("--both-orders compares two systems or more: name them with --systems")
    return out
