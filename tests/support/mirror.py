"""Helpers for mirror tests: write mm2.properties, run connect-mirror-maker, write to the source
under load, tell when the target caught up (reading records back is tests.support.kafka's)."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer

from mm2.localcluster import LocalCluster
from tests.support.kafka import Cluster, create_topic, last_values

log = logging.getLogger(__name__)

# Partitions of the topics the soak and restart tests write under load.
PARTITIONS = 4


def write_properties(
    directory: Path, primary: str, backup: str, topics: str, extra: str = ""
) -> Path:
    path = directory / "mm2.properties"
    path.write_text(
        f"""clusters = primary, backup
primary.bootstrap.servers = {primary}
backup.bootstrap.servers = {backup}
primary->backup.enabled = true
primary->backup.topics = {topics}
replication.factor = 1
offset-syncs.topic.replication.factor = 1
heartbeats.topic.replication.factor = 1
checkpoints.topic.replication.factor = 1
mm2.state.dir = {directory / "state"}
refresh.topics.interval.seconds = 1
tasks.max = 2
listeners = http://127.0.0.1:0
mm2.configs.topic = mm2-configs.{uuid.uuid4().hex[:12]}.internal
{extra}
""",
        encoding="utf-8",
    )
    return path


class MirrorProcess:
    """`connect-mirror-maker FILE` as a subprocess, its output in a log file."""

    def __init__(self, properties: Path, *args: str) -> None:
        self.log_path = properties.parent / f"mirror-{time.monotonic_ns()}.log"
        self._log = self.log_path.open("wb")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "mm2.cli.mirror_maker", str(properties), *args],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def stop(self, timeout: float = 90.0) -> int:
        """SIGTERM, as an operator's service manager sends; returns the exit code. A stop that
        fails or hangs (every thread's stack asked for with SIGQUIT) shows the log's end in the
        test's captured output."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.send_signal(signal.SIGQUIT)
            time.sleep(2)
            raise
        finally:
            if self.process.poll() is None:
                self.process.kill()
            self._log.close()
            if self.process.returncode != 0:
                tail = self.log().splitlines()[-300:]
                print("\n".join(["mirror log, last lines:", *tail]), file=sys.stderr)
        return code

    def kill9(self) -> None:
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(30)
        self._log.close()

    def kill9_tree(self) -> int:
        """SIGKILL the mirror and every process under it (the Spark JVM, its Python workers) at
        once, as a host crash or an OOM kill of the container would; how many processes died.
        kill9() leaves the children to notice their parent is gone."""
        pids = [self.process.pid, *descendants(self.process.pid)]
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.process.wait(30)
        self._log.close()
        deadline = time.monotonic() + 30
        while any(_alive(pid) for pid in pids[1:]) and time.monotonic() < deadline:
            time.sleep(0.2)
        return len(pids)

    def signal_tree(self, sig: signal.Signals) -> None:
        """Send `sig` to the mirror and every process under it: SIGSTOP and SIGCONT pause and
        resume it whole, as a VM that stalls or a long garbage collection would."""
        for pid in [self.process.pid, *descendants(self.process.pid)]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)

    def __enter__(self) -> MirrorProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process.poll() is None:
            self.stop()


def descendants(pid: int) -> list[int]:
    """Every process under pid (children, their children...), from /proc."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])  # the field after the state
        children.setdefault(ppid, []).append(int(entry.name))
    found: list[int] = []
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _alive(pid: int) -> bool:
    """pid exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def make_topic(cluster: LocalCluster, prefix: str, partitions: int = PARTITIONS) -> str:
    return create_topic(cluster, f"{prefix}-{uuid.uuid4().hex[:8]}", partitions=partitions)


def _repeated_index(i: int) -> bytes:
    return f"c{i}".encode() * 10


class ContinuousProducer:
    """Writes to the source in a thread, at a steady rate, until `limit` records or `seconds`
    have passed or stop() is called; counts delivered records and delivery errors.

    Record i goes to partition i % partitions with key `k<i>` and value `value(i)`; `config` is
    added to the producer's (e.g. enable.idempotence).

    A producer that delivers nothing for STUCK_S seconds while records wait is replaced: a
    librdkafka client that was told "no leader" while the broker stopped can keep the partition
    without a leader for good (librdkafka issue 5430). The waiting records are taken out of its
    queue, what it has in flight is settled, and a new producer sends them again, in order."""

    STUCK_S = 30.0

    def __init__(
        self,
        cluster: Cluster,
        topic: str,
        *,
        rate: float,
        limit: int,
        seconds: float,
        partitions: int = PARTITIONS,
        value: Callable[[int], bytes] = _repeated_index,
        config: Mapping[str, Any] | None = None,
    ) -> None:
        self._bootstrap = cluster.bootstrap_servers
        self._config = {**cluster.client_config(), "linger.ms": 10, **(config or {})}
        self._producer = Producer(self._config)
        self._topic = topic
        self._rate = rate
        self._limit = limit
        self._seconds = seconds
        self._partitions = partitions
        self._value = value
        self._stop = threading.Event()
        self.sent = 0
        self.delivered = 0
        self.replaced = 0  # producers replaced because they were stuck
        self.errors: list[str] = []
        self._purged: list[int] = []
        self._progress = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="resilience-producer", daemon=True)

    def _on_delivery(self, err: Any, msg: Any) -> None:
        if err is None:
            self.delivered += 1
            self._progress = time.monotonic()
        elif err.code() == KafkaError._PURGE_QUEUE:  # taken out by _replace: sent again
            self._purged.append(int(msg.key()[1:]))
        else:
            self.errors.append(str(err))

    def _produce(self, i: int) -> None:
        self._producer.produce(
            self._topic,
            self._value(i),
            f"k{i}".encode(),
            partition=i % self._partitions,
            on_delivery=self._on_delivery,
        )

    def _stuck(self) -> bool:
        waiting = self.sent - self.delivered - len(self.errors)
        return waiting > 0 and time.monotonic() - self._progress > self.STUCK_S

    def _replace(self) -> None:
        old, self._purged = self._producer, []
        old.purge(in_queue=True, in_flight=False)
        old.flush(120)  # what was in flight is delivered or fails; the purged are reported
        self._producer = Producer(self._config)
        self.replaced += 1
        # A purged record may be on the source already: one whose answer the broker's stop
        # lost goes back to the queue for a retry. Per partition the records are in order, so
        # those up to the partition's last record are written; the rest are sent again.
        last = {p: int(key[1:]) if key else -1 for p, key in self._last_keys().items()}
        again = [i for i in sorted(self._purged) if i > last.get(i % self._partitions, -1)]
        log.warning(
            "test producer delivered nothing for %.0f s: replaced, %d records sent again "
            "(%d purged ones were on the source already)",
            self.STUCK_S,
            len(again),
            len(self._purged) - len(again),
        )
        for i in again:
            while True:
                try:
                    self._produce(i)
                    break
                except BufferError:
                    self._producer.poll(0.5)
        self._progress = time.monotonic()

    def _last_keys(self) -> dict[int, bytes | None]:
        """Each partition's last key, asked until the source answers (at most 120 s)."""
        deadline = time.monotonic() + 120
        while True:
            try:
                return last_values(self._bootstrap, self._topic, keys=True)
            except KafkaException:
                if time.monotonic() > deadline:
                    raise
                time.sleep(1)

    def _run(self) -> None:
        started = time.monotonic()
        while (
            not self._stop.is_set()
            and self.sent < self._limit
            and time.monotonic() - started < self._seconds
        ):
            if self._stuck():
                self._replace()
            i = self.sent
            try:
                self._produce(i)
            except BufferError:
                self._producer.poll(0.5)
                continue
            self.sent += 1
            self._producer.poll(0)
            # Steady pace: sleep until the time the next record is due.
            due = started + self.sent / self._rate
            pause = due - time.monotonic()
            if pause > 0:
                self._stop.wait(pause)
        while self._producer.flush(30) > 0 and self._stuck():
            self._replace()
        self._producer.flush(120)

    def start(self) -> ContinuousProducer:
        self._thread.start()
        return self

    def join(self, timeout: float = 300) -> None:
        """Wait until the producer has ended (by its own bounds or stop()) and flushed; every
        record it sent was delivered."""
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "the producer thread did not end"
        assert not self.errors, f"{len(self.errors)} delivery errors, e.g. {self.errors[:3]}"
        assert self.delivered == self.sent, (self.delivered, self.sent)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(180)


def caught_up(source: LocalCluster, target: LocalCluster, topic: str) -> bool:
    """Every partition of the remote topic ends with the source partition's last record."""
    want = last_values(source.bootstrap_servers, topic)
    return bool(want) and last_values(target.bootstrap_servers, f"primary.{topic}") == want


def mm2_json(*args: str, timeout: float = 180) -> Any:
    """`mm2 ARGS --json` run as a subprocess, as an operator would: its answer (exit 0 asserted)."""
    done = subprocess.run(
        [sys.executable, "-m", "mm2.cli.tools", *args, "--json"],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def free_port() -> int:
    """A TCP port nothing listens on now (for a mirror's REST listener)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
