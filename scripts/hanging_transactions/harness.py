"""Hanging-transaction experiment: transactional load on a one-node KRaft cluster, stop the
broker (SIGTERM, or kill -9 with --grace 0), keep it down, resume, keep producing, then list the
partitions whose last stable offset (read_committed) stays behind the log end.

  /work/main/.venv/bin/python scripts/hanging_transactions/harness.py \
      --producer rdkafka --tv 2 --restarts 3 --outage 60 --after 90 --name rd-tv2

Everything (cluster dir, producer log, report.json, report.md) goes to /tmp/hang-runs/<name>/.
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from confluent_kafka import IsolationLevel, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

from mm2.localcluster import LocalCluster, find_java, resolve_classpath

HERE = Path(__file__).resolve().parent
DATA, COMPACT = "data", "compacted"


def log(msg: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {msg}", flush=True)


def classpath() -> str:
    return ":".join(str(j) for j in resolve_classpath("4.4.0"))


def offsets(admin: AdminClient, parts: list[TopicPartition]) -> tuple[dict, dict]:
    """(LSO by (topic, p), end by (topic, p))."""
    req = {tp: OffsetSpec.latest() for tp in parts}
    out = []
    for iso in (IsolationLevel.READ_COMMITTED, IsolationLevel.READ_UNCOMMITTED):
        futs = admin.list_offsets(req, isolation_level=iso, request_timeout=30)
        out.append(
            {(tp.topic, tp.partition): f.result(timeout=60).offset for tp, f in futs.items()}
        )
    return out[0], out[1]


def stuck_now(admin: AdminClient, parts, wait: float = 10.0) -> dict:
    """Partitions whose LSO is behind the end and did not move in `wait` s (producer running)."""
    lso1, _ = offsets(admin, parts)
    time.sleep(wait)
    lso2, end2 = offsets(admin, parts)
    return {
        k: {"lso": lso2[k], "end": end2[k]}
        for k in lso2
        if lso2[k] < end2[k] and lso2[k] == lso1[k]
    }


def _dump(java: str, cp: str, seg: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """Kafka's DumpLogSegments over one segment file."""
    command = [java, "-Xmx256m", "-cp", cp, "org.apache.kafka.tools.DumpLogSegments"]
    return subprocess.run(
        [*command, "--files", str(seg), *extra], capture_output=True, text=True, timeout=300
    )


def dump_batches(java: str, cp: str, part_dir: Path, lso: int, context: int = 4) -> list[str]:
    """Batch header lines of the partition's segments around `lso` (DumpLogSegments)."""
    lines: list[str] = []
    for seg in sorted(part_dir.glob("*.log")):
        r = _dump(java, cp, seg)
        lines += [line for line in r.stdout.splitlines() if line.startswith("baseOffset")]
    pat = re.compile(r"baseOffset: (\d+) lastOffset: (\d+)")
    idx = [i for i, line in enumerate(lines) if (m := pat.search(line)) and int(m[2]) >= lso]
    first = idx[0] if idx else max(0, len(lines) - context)
    sel = lines[max(0, first - context) : first + context + 1]
    keep = (
        "baseOffset",
        "lastOffset",
        "count",
        "producerId",
        "producerEpoch",
        "isTransactional",
        "isControl",
        "CreateTime",
    )
    short = []
    for line in sel:
        fields = dict(re.findall(r"(\w+): (\S+)", line))
        short.append(" ".join(f"{k}={fields[k]}" for k in keep if k in fields))
    # also the control-marker types (need the record-level dump for those: endTxnMarker)
    return short


def dump_markers(java: str, cp: str, part_dir: Path, lo: int, hi: int) -> list[str]:
    out = []
    for seg in sorted(part_dir.glob("*.log")):
        r = _dump(java, cp, seg, "--print-data-log")
        for line in r.stdout.splitlines():
            m = re.search(r"(?:baseOffset|offset): (\d+)", line)
            if (
                m
                and lo <= int(m[1]) <= hi
                and ("endTxnMarker" in line or "isControl: true" in line)
            ):
                out.append(re.sub(r"\s+", " ", line)[:300])
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--producer", choices=["rdkafka", "java"], default="rdkafka")
    ap.add_argument(
        "--tv", type=int, choices=[1, 2], default=2, help="transaction.version at format"
    )
    ap.add_argument("--restarts", type=int, default=3)
    ap.add_argument("--outage", type=float, default=60)
    ap.add_argument("--after", type=float, default=90, help="producing after each resume")
    ap.add_argument("--warmup", type=float, default=20)
    ap.add_argument("--grace", type=float, default=60, help="SIGTERM grace; 0 = kill -9")
    ap.add_argument("--rate", type=float, default=20)
    ap.add_argument(
        "--recreate-on-error", action="store_true", help="rdkafka: new producer on any error"
    )
    ap.add_argument(
        "--producers",
        type=int,
        default=1,
        help="concurrent producers (own transactional ids), each at --rate",
    )
    ap.add_argument("--name", required=True)
    a = ap.parse_args()

    out = Path("/tmp/hang-runs") / a.name
    out.mkdir(parents=True, exist_ok=True)
    cp = classpath()
    java = str(find_java().executable)
    report: dict = {"args": vars(a), "restarts": [], "final": {}}

    cluster = LocalCluster("hang", workdir=out / "cluster")
    if a.tv == 1:
        cluster._format_arguments = ("--feature", "transaction.version=1")
    cluster.start()
    bs = cluster.bootstrap_servers
    log(f"cluster up at {bs}, workdir {cluster.workdir}")
    prod = None
    try:
        feat = subprocess.run(
            [
                java,
                "-cp",
                cp,
                "org.apache.kafka.tools.FeatureCommand",
                "--bootstrap-server",
                bs,
                "describe",
            ],
            capture_output=True,
            text=True,
        )
        tvline = [line for line in feat.stdout.splitlines() if "transaction.version" in line]
        report["feature"] = tvline
        log(f"feature: {tvline}")

        admin = AdminClient({"bootstrap.servers": bs, "log_level": 0})
        fs = admin.create_topics(
            [NewTopic(DATA, 6, 1), NewTopic(COMPACT, 25, 1, config={"cleanup.policy": "compact"})]
        )
        for f in fs.values():
            f.result(60)
        parts = [TopicPartition(DATA, p) for p in range(6)] + [
            TopicPartition(COMPACT, p) for p in range(25)
        ]

        prods = []
        for i in range(a.producers):
            plog = (out / ("producer.log" if i == 0 else f"producer{i}.log")).open("ab")
            tid = f"hang-{a.producer}" + (f"-{i}" if i else "")
            if a.producer == "rdkafka":
                cmd = [
                    sys.executable,
                    str(HERE / "producer_rdkafka.py"),
                    bs,
                    DATA,
                    COMPACT,
                    "--rate",
                    str(a.rate),
                    "--txn-id",
                    tid,
                ]
                if a.recreate_on_error:
                    cmd.append("--recreate-on-error")
            else:
                cmd = [
                    java,
                    "-Xmx256m",
                    "-XX:+UseSerialGC",
                    "-cp",
                    cp,
                    str(HERE / "Producer.java"),
                    bs,
                    DATA,
                    COMPACT,
                    str(a.rate),
                    tid,
                ]
            prods.append(
                subprocess.Popen(cmd, stdout=plog, stderr=subprocess.STDOUT, start_new_session=True)
            )
            log(f"producer pid {prods[-1].pid} ({tid}): {' '.join(cmd[:3])} ...")
        prod = prods[0]
        time.sleep(a.warmup + (10 if a.producer == "java" else 0))

        seen: dict = {}
        for r in range(1, a.restarts + 1):
            before_stop = offsets(admin, parts)[1]
            mark = cluster.log_path.stat().st_size
            t0 = time.time()
            log(f"restart {r}: halt(grace={a.grace})")
            cluster.halt(grace=a.grace)
            stop_s = time.time() - t0
            # end offsets at shutdown, read from disk is costly; take them after resume instead
            time.sleep(a.outage)
            log(f"restart {r}: resume (stop took {stop_s:.1f}s)")
            cluster.resume()
            admin = AdminClient({"bootstrap.servers": bs, "log_level": 0})
            time.sleep(a.after)
            stuck = stuck_now(admin, parts)
            new = {f"{k[0]}-{k[1]}": v for k, v in stuck.items() if k not in seen}
            seen.update(stuck)
            with cluster.log_path.open("rb") as fh:
                fh.seek(mark)
                seg = fh.read().decode("utf-8", "replace")
            leader = [line for line in seg.splitlines() if "Couldn't find leader" in line]
            report["restarts"].append(
                {
                    "restart": r,
                    "stop_seconds": round(stop_s, 1),
                    "end_before_stop": {f"{k[0]}-{k[1]}": v for k, v in before_stop.items()},
                    "new_stuck": new,
                    "couldnt_find_leader_lines": len(leader),
                    "couldnt_find_leader_sample": leader[:5],
                }
            )
            log(
                f"restart {r}: new stuck partitions {new}; Couldn't-find-leader lines {len(leader)}"
            )
            (out / "report.json").write_text(json.dumps(report, indent=1, default=str))

        # final, definitive: stop the producer, then LSO < end means open for good
        for pr in prods:
            pr.send_signal(signal.SIGTERM)
        for pr in prods:
            try:
                pr.wait(40)
            except subprocess.TimeoutExpired:
                pr.kill()
                pr.wait()
        time.sleep(5)
        lso, end = offsets(admin, parts)
        final = {f"{k[0]}-{k[1]}": {"lso": lso[k], "end": end[k]} for k in lso if lso[k] < end[k]}
        report["final"] = final
        log(f"final open partitions (producer stopped): {final}")
    finally:
        for pr in prods if prod is not None else []:
            if pr.poll() is None:
                pr.kill()
                pr.wait()
        cluster.stop()  # keeps workdir (we gave it)
    # evidence from the stopped cluster's files
    ev = {}
    for key, v in report["final"].items():
        pdir = out / "cluster" / "data" / key
        ev[key] = {"batches": dump_batches(java, cp, pdir, v["lso"])}
        ev[key]["markers_near"] = dump_markers(java, cp, pdir, v["lso"] - 40, v["end"] + 1)[-8:]
    report["evidence"] = ev
    if report["final"]:  # the coordinator's view: last records of the transaction log
        tl = []
        for tdir in sorted((out / "cluster" / "data").glob("__transaction_state-*")):
            for seg in sorted(tdir.glob("*.log")):
                r = _dump(java, cp, seg, "--transaction-log-decoder", "--print-data-log")
                tl += [
                    f"{tdir.name}: " + re.sub(r"\s+", " ", line)[:400]
                    for line in r.stdout.splitlines()
                    if "payload" in line
                ]
        report["txn_log_tail"] = tl[-60:]
    text = (out / "cluster" / "server.log").read_text(errors="replace")
    report["broker_log_couldnt_find_leader"] = [
        line for line in text.splitlines() if "Couldn't find leader" in line
    ][:20]
    report["broker_log_txn_lines"] = [
        line
        for line in text.splitlines()
        if re.search(
            r"hanging|TransactionMarker|abort(?:ing|ed) .*transaction|timed out.*transaction"
            r"|Completed rollback of ongoing transaction",
            line,
            re.I,
        )
    ][:40]
    (out / "report.json").write_text(json.dumps(report, indent=1, default=str))
    log(f"report: {out / 'report.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
