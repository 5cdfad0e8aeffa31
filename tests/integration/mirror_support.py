"""Helpers for mirror tests: write mm2.properties, run connect-mirror-maker, read topics back."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

Record = tuple[int, bytes | None, bytes | None, int, tuple[tuple[str, bytes | None], ...]]


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
        """SIGTERM, as an operator's service manager sends; returns the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(timeout)
        finally:
            if self.process.poll() is None:
                self.process.kill()
            self._log.close()
        return code

    def kill9(self) -> None:
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(30)
        self._log.close()

    def __enter__(self) -> MirrorProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process.poll() is None:
            self.stop()


def wait_for(check: Callable[[], bool], timeout: float, what: str, log: Callable[[], str]) -> float:
    """Seconds it took until check() held; fails with the mirror's log tail otherwise."""
    start = time.monotonic()
    while not check():
        if time.monotonic() - start > timeout:
            lines = [ln for ln in log().splitlines() if not ln.lstrip().startswith("at ")]
            tail = "\n".join(lines[-60:])
            raise AssertionError(f"timed out waiting for {what}; mirror log:\n{tail}")
        time.sleep(0.3)
    return time.monotonic() - start


def read_topic(bootstrap: str, topic: str, **config: Any) -> dict[int, list[Record]]:
    """Every record of every partition, in order, from the start to the high watermark."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "mm2-test-reader",
            "enable.auto.commit": False,
            "enable.partition.eof": False,
            **config,
        }
    )
    try:
        metadata = consumer.list_topics(topic, timeout=10).topics[topic]
        out: dict[int, list[Record]] = {}
        for p in sorted(metadata.partitions):
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
            records: list[Record] = []
            if high > low:
                consumer.assign([TopicPartition(topic, p, low)])
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline:
                    msgs = consumer.consume(1000, 0.5)
                    for m in msgs:
                        if m.error():
                            continue
                        records.append(
                            (
                                m.offset() or 0,
                                m.key(),
                                m.value(),
                                m.timestamp()[1],
                                tuple(m.headers() or ()),
                            )
                        )
                    position = consumer.position([TopicPartition(topic, p)])[0].offset
                    if position >= high:
                        break
            out[p] = records
        return out
    finally:
        consumer.close()


def count(bootstrap: str, topic: str) -> int:
    """Records a read_committed reader sees in `topic` (0 while a just-created topic has no
    leader yet). Records are read, not offsets subtracted: transaction markers take offsets."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "mm2-test-counter",
            "enable.partition.eof": True,
            "isolation.level": "read_committed",
        }
    )
    try:
        metadata = consumer.list_topics(timeout=10).topics.get(topic)
        if metadata is None or metadata.error is not None:
            return 0
        partitions = []
        for p in metadata.partitions:
            try:
                low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
            except KafkaException:
                return 0
            if high > low:
                partitions.append(TopicPartition(topic, p, low))
        if not partitions:
            return 0
        consumer.assign(partitions)
        total, ended = 0, set()
        deadline = time.monotonic() + 30
        while len(ended) < len(partitions) and time.monotonic() < deadline:
            for m in consumer.consume(10_000, 0.5):
                err = m.error()
                if err is None:
                    total += 1
                elif err.code() == KafkaError._PARTITION_EOF:
                    ended.add(m.partition())
        return total
    finally:
        consumer.close()


def content(records: list[Record]) -> list[tuple[Any, ...]]:
    """A partition's records without their offsets (offsets differ between clusters)."""
    return [r[1:] for r in records]


def digest(records: list[Record]) -> str:
    h = hashlib.sha256()
    for r in content(records):
        h.update(repr(r).encode())
    return h.hexdigest()


def last_values(bootstrap: str, topic: str) -> dict[int, bytes | None]:
    """The value of the last committed record of each partition (order is kept, so a mirror
    whose every partition ends with the source's last record has caught up). The log may end
    in transaction markers, so the last records are read, not the last offset."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "mm2-test-tail",
            "enable.partition.eof": True,
            "isolation.level": "read_committed",
        }
    )
    try:
        metadata = consumer.list_topics(timeout=10).topics.get(topic)
        if metadata is None or metadata.error is not None:
            return {}
        out: dict[int, bytes | None] = {}
        for p in metadata.partitions:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
            if high <= low:
                continue
            consumer.assign([TopicPartition(topic, p, max(low, high - 200))])
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                msgs = consumer.consume(1000, 1)
                for m in msgs:
                    if m.error() is None:
                        out[p] = m.value()
                if any(m.error() is not None and m.error().code() == KafkaError._PARTITION_EOF
                       for m in msgs):  # fmt: skip
                    break
        return out
    finally:
        consumer.close()
