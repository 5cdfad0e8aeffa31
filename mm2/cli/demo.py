"""`make demo`: two local clusters, a mirror between them, and records you can watch arrive."""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from tqdm import tqdm

from mm2.kafka.log_reader import RecordCounter
from mm2.kafka.producer import RecordProducer
from mm2.kafka.topics import NewTopicSpec, TopicAdmin
from mm2.localcluster import LocalClusters

TOPICS = {"demo-orders": 3, "demo-payments": 2, "demo-clicks": 1}

PROPERTIES = """\
# Written by `make demo`: mirror every demo-* topic from primary to backup.
clusters = primary, backup
primary.bootstrap.servers = {primary}
backup.bootstrap.servers = {backup}

primary->backup.enabled = true
primary->backup.topics = demo-.*

# One broker per cluster, so replication factor 1 everywhere.
replication.factor = 1
offset-syncs.topic.replication.factor = 1
heartbeats.topic.replication.factor = 1
checkpoints.topic.replication.factor = 1

mm2.state.dir = {state}
tasks.max = 2
"""


class _Backup:
    """Long-lived clients on backup, asked again at every progress tick."""

    def __init__(self, bootstrap: str) -> None:
        self.admin = TopicAdmin({"bootstrap.servers": bootstrap})
        self.counter = RecordCounter({"bootstrap.servers": bootstrap})


def _remote_counts(backup: _Backup) -> dict[str, int]:
    remotes = {f"primary.{t}" for t in TOPICS}
    present = backup.admin.list_topics()
    wanted = [(t, p) for t, n in present.items() if t in remotes for p in range(n)]
    # Records, not end offsets: the mirror's transactions put commit markers in the log.
    seen = backup.counter.count(wanted)
    return {t: seen.get(f"primary.{t}", 0) for t in TOPICS}


def _produce(bootstrap: str, per_topic: int) -> None:
    producer = RecordProducer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    total = per_topic * len(TOPICS)
    with tqdm(total=total, desc="produce to primary", unit="rec") as bar:
        for i in range(per_topic):
            for topic, partitions in TOPICS.items():
                value = f'{{"id": {i}, "topic": "{topic}"}}'.encode()
                producer.send(topic, f"key-{i}".encode(), value, partition=i % partitions)
            if i % 500 == 499:
                bar.update(500 * len(TOPICS))
        producer.flush()
        bar.update(total - bar.n)


def _watch(
    backup: _Backup, per_topic: int, mirror: subprocess.Popen[bytes], timeout: float
) -> bool:
    total = per_topic * len(TOPICS)
    deadline = time.monotonic() + timeout
    with tqdm(total=total, desc="arrived on backup", unit="rec") as bar:
        while time.monotonic() < deadline and mirror.poll() is None:
            done = sum(_remote_counts(backup).values())
            bar.update(done - bar.n)
            if done >= total:
                return True
            time.sleep(0.5)
    return False


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make demo", description=__doc__)
    parser.add_argument("--records", type=int, default=20_000, help="records per topic")
    parser.add_argument("--workdir", default="demo-work", help="where state and logs go")
    parser.add_argument("--once", action="store_true", help="stop once every record arrived")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for them")
    args = parser.parse_args(argv)
    work = Path(args.workdir).resolve()
    work.mkdir(parents=True, exist_ok=True)
    print("starting two local Kafka clusters (primary, backup)...")
    with LocalClusters(["primary", "backup"], workdir=work / "clusters") as clusters:
        primary = clusters["primary"].bootstrap_servers
        backup = clusters["backup"].bootstrap_servers
        print(f"  primary = {primary}\n  backup  = {backup}")
        created = TopicAdmin({"bootstrap.servers": primary}).create_topics(
            NewTopicSpec(topic, partitions) for topic, partitions in TOPICS.items()
        )
        failed = [str(outcome) for outcome in created.values() if not isinstance(outcome, str)]
        if failed:
            print("\n".join(failed), file=sys.stderr)
            return 1
        props = work / "mm2.properties"
        props.write_text(PROPERTIES.format(primary=primary, backup=backup, state=work / "state"))
        log = (work / "mirror.log").open("wb")
        print(f"running: connect-mirror-maker {props}  (log: {work / 'mirror.log'})")
        mirror = subprocess.Popen(
            [sys.executable, "-m", "mm2.cli.mirror_maker", str(props)],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        try:
            _produce(primary, args.records)
            target = _Backup(backup)
            ok = _watch(target, args.records, mirror, args.timeout)
            counts = _remote_counts(target)
            for topic in TOPICS:
                source, remote = f"primary:{topic}", f"backup:primary.{topic}"
                print(f"  {source:<22} {args.records:>8}  ->  {remote:<30} {counts[topic]:>8}")
            if not ok:
                print(f"not every record arrived; see {work / 'mirror.log'}", file=sys.stderr)
                return 1
            print("every record arrived on backup, under its remote name primary.<topic>.")
            if not args.once:
                print("the mirror keeps running: produce more to primary, or Ctrl-C to stop.")
                mirror.wait()
        except KeyboardInterrupt:
            pass
        finally:
            if mirror.poll() is None:
                mirror.send_signal(signal.SIGINT)
                try:
                    mirror.wait(60)
                except subprocess.TimeoutExpired:
                    mirror.kill()
            log.close()
    print("stopped: mirror and both clusters.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
