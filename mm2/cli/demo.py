"""`make demo`: two local clusters, a mirror between them, and records you can watch arrive."""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Sequence
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
# The way back, for a drill (docs/getting-started.md, "A disaster-recovery drill"): backup's
# own demo-* topics reach primary as backup.demo-*; primary's copies on backup are never sent
# back.
backup->primary.enabled = true
backup->primary.topics = demo-.*

# One broker per cluster, so replication factor 1 everywhere.
replication.factor = 1
offset-syncs.topic.replication.factor = 1
heartbeats.topic.replication.factor = 1
checkpoints.topic.replication.factor = 1

mm2.state.dir = {state}
tasks.max = 2
"""


# Every record of a run carries the run's id: a second `make demo` reuses the clusters (and
# their records) of the first, and must count only its own.
RUN_HEADER = "mm2-demo-run"


class _Backup:
    """Long-lived clients on backup, asked again at every progress tick."""

    def __init__(self, bootstrap: str, run: bytes) -> None:
        self.admin = TopicAdmin({"bootstrap.servers": bootstrap})
        self.counter = RecordCounter({"bootstrap.servers": bootstrap}, header=(RUN_HEADER, run))


def _remote_counts(backup: _Backup) -> dict[str, int]:
    remotes = {f"primary.{t}" for t in TOPICS}
    present = backup.admin.list_topics()
    wanted = [(t, p) for t, n in present.items() if t in remotes for p in range(n)]
    # Records, not end offsets: the mirror's transactions put commit markers in the log.
    seen = backup.counter.count(wanted)
    return {t: seen.get(f"primary.{t}", 0) for t in TOPICS}


def _produce(bootstrap: str, per_topic: int, run: bytes) -> None:
    producer = RecordProducer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    total = per_topic * len(TOPICS)
    headers = {RUN_HEADER: run}
    with tqdm(total=total, desc="produce to primary", unit="rec") as bar:
        for i in range(per_topic):
            for topic, partitions in TOPICS.items():
                value = f'{{"id": {i}, "topic": "{topic}"}}'.encode()
                key = f"key-{i}".encode()
                producer.send(topic, key, value, partition=i % partitions, headers=headers)
            if i % 500 == 499:
                bar.update(500 * len(TOPICS))
        producer.flush()
        bar.update(total - bar.n)


# The mirror's own account of its start-up (its `mm2` and Spark session loggers, and each copy
# task once it copies), shown while the records are awaited.
_PROGRESS = re.compile(r"^\S+ \S+ INFO (?:mm2|mm2\.pipeline\.session|\S+): (.*)$")


def _is_progress(logger_line: re.Match[str]) -> bool:
    line = logger_line.group(0)
    return " INFO mm2: " in line or " mm2.pipeline.session: " in line or ": copying " in line


class _MirrorProgress:
    """Shows the start-up lines of the mirror's log as they come."""

    def __init__(self, log: Path) -> None:
        self._log = log
        self._seen = 0

    def show(self, write: Callable[[str], object]) -> None:
        try:
            lines = self._log.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return
        for line in lines[self._seen :]:
            found = _PROGRESS.match(line)
            if found and _is_progress(found):
                write(f"  mirror: {found.group(1)}")
        self._seen = len(lines)


def _watch(
    backup: _Backup,
    per_topic: int,
    mirror: subprocess.Popen[bytes],
    timeout: float,
    progress: _MirrorProgress,
) -> bool:
    total = per_topic * len(TOPICS)
    deadline = time.monotonic() + timeout
    with tqdm(total=total, desc="arrived on backup", unit="rec") as bar:
        while time.monotonic() < deadline and mirror.poll() is None:
            progress.show(bar.write)
            counts = _remote_counts(backup)
            done = sum(min(n, per_topic) for n in counts.values())
            bar.update(done - bar.n)
            if done >= total:
                return True
            time.sleep(0.5)
    return False


def _verdict(counts: dict[str, int], per_topic: int) -> str | None:
    """None when each topic got exactly what this run produced, else what is wrong."""
    short = {t: per_topic - n for t, n in counts.items() if n < per_topic}
    extra = {t: n - per_topic for t, n in counts.items() if n > per_topic}
    if short:
        missing = ", ".join(f"{n} of {t}" for t, n in sorted(short.items()))
        return f"not every record arrived ({missing} missing)"
    if extra:
        twice = ", ".join(f"{n} of {t}" for t, n in sorted(extra.items()))
        return f"records arrived more than once ({twice})"
    return None


def _stop_on(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)


def main(argv: Sequence[str] | None = None) -> int:
    # SIGTERM (a service manager, `timeout`, a killed make) and SIGHUP (a closed terminal) stop
    # the demo as Ctrl-C does: mirror first, then both clusters, so no broker is left behind.
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _stop_on)
    try:
        return _run(argv)
    except KeyboardInterrupt:  # Ctrl-C or a signal: the mirror and the clusters are down by now
        print("stopped: mirror and both clusters.")
        return 0


def _run(argv: Sequence[str] | None) -> int:
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
        mirror_log = work / "mirror.log"
        log = mirror_log.open("wb")
        print(f"running: connect-mirror-maker {props}  (log: {mirror_log})")
        mirror = subprocess.Popen(
            [sys.executable, "-m", "mm2.cli.mirror_maker", str(props)],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        target: _Backup | None = None
        try:
            run = uuid.uuid4().hex[:12].encode()
            print(f"this run's records carry the header {RUN_HEADER}={run.decode()}")
            _produce(primary, args.records, run)
            target = _Backup(backup, run)
            _watch(target, args.records, mirror, args.timeout, _MirrorProgress(mirror_log))
            counts = _remote_counts(target)
            print("records of this run (a read_committed reader's count):")
            for topic in TOPICS:
                source, remote = f"primary:{topic}", f"backup:primary.{topic}"
                print(f"  {source:<22} {args.records:>8}  ->  {remote:<30} {counts[topic]:>8}")
            verdict = _verdict(counts, args.records)
            if verdict is not None:
                print(f"{verdict}; see {work / 'mirror.log'}", file=sys.stderr)
                return 1
            print("every record arrived on backup once, under its remote name primary.<topic>.")
            if not args.once:
                print(
                    "the mirror keeps running: produce more to primary, try the drill in the "
                    "docs/getting-started.md ('A disaster-recovery drill'), or Ctrl-C to stop."
                )
                # In steps: a Ctrl-C (or a kill -INT of this process) that another thread
                # took is handled by the main thread only between two bytecodes.
                while mirror.poll() is None:
                    time.sleep(0.5)
        finally:
            if target is not None:  # before the clusters go: no reconnect noise after them
                target.counter.close()
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
