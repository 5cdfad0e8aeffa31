"""Apache Kafka's MirrorMaker 2 (dedicated mode) as a subprocess in integration tests, and
readers of what mirrors leave on the target: Connect's offsets topic and the remote topics.

The jars are the benchmark's (bench/pom.xml, resolved from Maven Central and cached in ~/.m2):
`org.apache.kafka.connect.mirror.MirrorMaker FILE`, run as `bin/connect-mirror-maker.sh` runs it.
Jars that cannot be resolved fail the test with the reason: these tests exist to compare with
the real Apache MM2, so a missing Apache MM2 is a failure, never a skip.
"""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import NamedTuple, cast

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from bench.apache import LOG4J2, MAIN_CLASS, ApacheJars, resolve_apache_mm2
from bench.systems import APACHE_JVM
from mm2.errors import JarResolutionError, RecordFormatError
from mm2.kafka.take import take
from mm2.localcluster import C1_ONLY, find_java
from mm2.records.connect_offsets import (
    ConnectOffsetKey,
    MirrorSourcePartition,
    decode_offset_value,
)

# What the JVM exits with after a SIGTERM whose shutdown hooks completed (128 + 15); 0 if
# MirrorMaker ended by itself first.
CLEAN_EXIT_CODES = (0, 143)
STARTED = "Kafka MirrorMaker started"
STOPPED = "Kafka MirrorMaker stopped."
CONNECTOR = "MirrorSourceConnector"


@functools.cache
def apache_jars(version: str | None = None) -> ApacheJars:
    """Apache MM2's classpath (of `version`, else the first the bench resolves), resolved once
    per test session; a failure fails the test."""
    try:
        return resolve_apache_mm2(None if version is None else [version])
    except JarResolutionError as exc:
        pytest.fail(
            f"Apache MirrorMaker 2 {version or ''} is needed here and its jars could not be "
            f"resolved from Maven Central with bench/pom.xml: {exc}",
            pytrace=False,
        )


def offsets_topic(source: str) -> str:
    """The offsets topic dedicated mode gives a flow from `source` (on its target cluster)."""
    return f"mm2-offsets.{source}.internal"


class ApacheMirrorMaker:
    """`connect-mirror-maker.sh FILE` in dedicated mode, its output in a log file.

    Use it as a context manager: on the way out it is stopped (SIGTERM, then SIGKILL) whatever
    happened, so no JVM outlives its test.
    """

    def __init__(
        self,
        properties_text: str,
        workdir: Path,
        *,
        clusters: Iterable[str] = (),
        jars: ApacheJars | None = None,
        jvm_options: Iterable[str] = (C1_ONLY,),  # it lives for minutes
    ) -> None:
        jars = jars or apache_jars()
        workdir.mkdir(parents=True, exist_ok=True)
        stamp = time.monotonic_ns()
        self.properties = workdir / f"apache-mm2-{stamp}.properties"
        self.properties.write_text(properties_text, encoding="utf-8")
        log4j = workdir / "apache-log4j2.properties"
        log4j.write_text(LOG4J2, encoding="utf-8")
        self.version = jars.version
        self.log_path = workdir / f"apache-mm2-{stamp}.log"
        self._log = self.log_path.open("wb")
        command = [
            str(find_java().executable),
            *APACHE_JVM,
            *jvm_options,
            f"-Dlog4j2.configurationFile={log4j}",
            "-cp",
            os.pathsep.join(str(j) for j in jars.classpath),
            MAIN_CLASS,
            str(self.properties),
        ]
        clusters = list(clusters)
        if clusters:
            command += ["--clusters", *clusters]
        self.process = subprocess.Popen(
            command, stdout=self._log, stderr=subprocess.STDOUT, cwd=workdir
        )

    def alive(self) -> bool:
        return self.process.poll() is None

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def log_tail(self, lines: int = 60) -> str:
        """The last lines of the log without Java stack frames."""
        kept = [ln for ln in self.log().splitlines() if not ln.lstrip().startswith("at ")]
        return "\n".join(kept[-lines:])

    def wait_started(self, timeout: float = 120.0) -> float:
        """Seconds until MirrorMaker said it started; fails if it exits or takes too long."""
        start = time.monotonic()
        while STARTED not in self.log():
            if not self.alive():
                raise AssertionError(
                    f"Apache MM2 {self.version} exited with {self.process.returncode} before it "
                    f"started; its log:\n{self.log_tail()}"
                )
            if time.monotonic() - start > timeout:
                raise AssertionError(
                    f"Apache MM2 did not start within {timeout:.0f} s; its log:\n{self.log_tail()}"
                )
            time.sleep(0.2)
        return time.monotonic() - start

    def stop(self, timeout: float = 60.0, *, check: bool = True) -> int:
        """SIGTERM as an operator's service manager sends it; the exit code.

        With check, a stop that needed SIGKILL or did not run MirrorMaker's shutdown to its end
        (the herders flush positions on the way out) fails the test."""
        killed = False
        if self.alive():
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                killed = True
                self.process.kill()
                self.process.wait(30)
        if not self._log.closed:
            self._log.close()
        code = self.process.returncode
        if check:
            if killed:
                raise AssertionError(
                    f"Apache MM2 did not stop within {timeout:.0f} s of SIGTERM and was killed; "
                    f"its log:\n{self.log_tail()}"
                )
            if code not in CLEAN_EXIT_CODES or STOPPED not in self.log():
                raise AssertionError(
                    f"Apache MM2 did not stop cleanly (exit code {code}); its log:\n"
                    f"{self.log_tail()}"
                )
        return code

    def __enter__(self) -> ApacheMirrorMaker:
        return self

    def __exit__(self, *exc: object) -> None:
        # An exception in the test already explains the failure: only make sure the JVM is gone.
        self.stop(check=False)


# -- reading topics --------------------------------------------------------------------------


class Fetched(NamedTuple):
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]


def read_all(
    bootstrap: str, topic: str, *, isolation: str = "read_committed", timeout: float = 60.0
) -> list[Fetched]:
    """Every record of every partition from the start to the end (the last stable offset for
    read_committed), in partition then offset order. A missing topic reads as empty."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "mm2-test-apache-reader",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "isolation.level": isolation,
        }
    )
    try:
        metadata = consumer.list_topics(topic, timeout=10).topics.get(topic)
        if metadata is None or metadata.error is not None or not metadata.partitions:
            return []
        pending = set(metadata.partitions)
        consumer.assign([TopicPartition(topic, p, 0) for p in pending])  # 0: from the start
        out: list[Fetched] = []
        deadline = time.monotonic() + timeout
        while pending:
            if time.monotonic() > deadline:
                raise AssertionError(f"reading {topic} did not reach its end in {timeout:.0f} s")
            for m in take(consumer, 10_000, 0.5):
                error = m.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        pending.discard(m.partition())
                        continue
                    raise AssertionError(f"reading {topic}: {error}")
                partition, offset = m.partition(), m.offset()
                assert partition is not None and offset is not None
                headers = cast(tuple[tuple[str, bytes | None], ...], tuple(m.headers() or ()))
                out.append(Fetched(partition, offset, m.key(), m.value(), headers))
        out.sort(key=lambda f: (f.partition, f.offset))
        return out
    finally:
        consumer.close()


def values_by_partition(records: Iterable[Fetched]) -> dict[int, list[bytes | None]]:
    out: dict[int, list[bytes | None]] = {}
    for r in records:
        out.setdefault(r.partition, []).append(r.value)
    return out


class PositionRecord(NamedTuple):
    """One record of the offsets topic that holds a MirrorSourceConnector position."""

    kafka_partition: int  # the offsets topic's partition it was written to
    kafka_offset: int
    key: bytes
    source_partition: int
    offset: int | None  # None: a tombstone
    headers: Mapping[str, bytes | None]


def position_records(
    bootstrap: str, source: str, topic: str, *, isolation: str = "read_committed"
) -> list[PositionRecord]:
    """The positions of `topic` from `source` in the offsets topic, in log order per partition."""
    out: list[PositionRecord] = []
    for r in read_all(bootstrap, offsets_topic(source), isolation=isolation):
        if r.key is None:
            continue
        try:
            key = ConnectOffsetKey.from_bytes(r.key)
        except RecordFormatError:
            continue  # not a key of MM2's connectors
        part = key.partition
        if (
            key.connector != CONNECTOR
            or not isinstance(part, MirrorSourcePartition)
            or part.cluster != source
            or part.topic != topic
        ):
            continue
        offset = None if r.value is None else decode_offset_value(r.value)
        headers = dict(r.headers)
        out.append(PositionRecord(r.partition, r.offset, r.key, part.partition, offset, headers))
    return out


def latest_positions(records: Iterable[PositionRecord]) -> dict[int, int]:
    """The position each source partition resumes from, as Connect's reader sees it: the last
    record of each key wins (every key lives in one partition, so log order decides)."""
    latest: dict[int, int | None] = {}
    for r in records:
        latest[r.source_partition] = r.offset
    return {p: o for p, o in latest.items() if o is not None}


def topic_partition_count(bootstrap: str, topic: str) -> int:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    return len(admin.list_topics(topic, timeout=10).topics[topic].partitions)


def end_offsets(bootstrap: str, topic: str) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "mm2-test-apache-ends"})
    try:
        metadata = consumer.list_topics(topic, timeout=10).topics[topic]
        return {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
            for p in metadata.partitions
        }
    finally:
        consumer.close()


def cluster_id(bootstrap: str) -> str:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    found: str = admin.describe_cluster(request_timeout=10).result().cluster_id
    return found


# -- producing and comparing -----------------------------------------------------------------


def produce_numbered(
    bootstrap: str, topic: str, label: str, count: int, partitions: int, *, size: int = 100
) -> None:
    """`count` records with unique values `label-i` (padded to `size` bytes), round-robin over
    the partitions, so that any record the target holds twice or lacks can be named."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "acks": "all"})
    for i in range(count):
        value = f"{label}-{i:07d}-".encode().ljust(size, b".")
        while True:
            try:
                producer.produce(topic, value, f"k{i}".encode(), partition=i % partitions)
                break
            except BufferError:
                producer.poll(0.1)
        producer.poll(0)
    left = producer.flush(60)
    assert left == 0, f"{left} records not acknowledged by {topic}"


def copy_problems(
    expected: Mapping[int, list[bytes | None]], target: Mapping[int, list[bytes | None]]
) -> list[str]:
    """How the target differs from what it should hold, per partition, in a line each."""
    problems: list[str] = []
    for p in sorted(set(expected) | set(target)):
        want, got = expected.get(p, []), target.get(p, [])
        if want == got:
            continue
        extra = Counter(got) - Counter(want)
        missing = Counter(want) - Counter(got)
        first_extra = next((v for v in got if v in extra), None)
        first_missing = next((v for v in want if v in missing), None)
        problems.append(
            f"partition {p}: expected {len(want)}, target {len(got)}; "
            f"{extra.total()} extra (copied again), first {_short(first_extra)}; "
            f"{missing.total()} missing, first {_short(first_missing)}"
            + ("" if extra or missing else "; same records in another order")
        )
    return problems


def _short(value: bytes | None) -> str:
    return "-" if value is None else repr(value.rstrip(b".")[:24])


def wait_content(
    target_bootstrap: str,
    target_topic: str,
    expected: Mapping[int, list[bytes | None]],
    *,
    timeout: float,
    log: Callable[[], str],
    alive: Callable[[], bool] = lambda: True,
    settle: float = 3.0,
) -> float:
    """Wait until a read_committed reader of the target holds at least as many records as
    expected and that number has not changed for `settle` seconds (so a mirror that copies
    records again is caught after it is done, not half way); then the target's partitions
    must hold exactly the expected values, in order. Returns the seconds it took."""
    want = sum(len(v) for v in expected.values())
    start = time.monotonic()
    last, since = -1, time.monotonic()
    while True:
        target = values_by_partition(read_all(target_bootstrap, target_topic))
        have = sum(len(v) for v in target.values())
        if have != last:
            last, since = have, time.monotonic()
        if have >= want and time.monotonic() - since >= settle:
            break
        running = alive()
        if time.monotonic() - start > timeout or not running:
            why = f"after {timeout:.0f} s" if running else "when the mirror exited"
            raise AssertionError(
                f"{target_topic}: {have} of {want} records {why}\n"
                + "\n".join(copy_problems(expected, target))
                + f"\nmirror log:\n{log()}"
            )
        time.sleep(0.5)
    took = time.monotonic() - start
    problems = copy_problems(expected, target)
    assert not problems, f"{target_topic} is not what it should be:\n" + "\n".join(problems)
    return took


def wait_copied(
    source_bootstrap: str,
    source_topic: str,
    target_bootstrap: str,
    target_topic: str,
    *,
    timeout: float,
    log: Callable[[], str],
    alive: Callable[[], bool] = lambda: True,
) -> float:
    """Wait until the target holds each record of the source exactly once, in order, in the
    same partition (see wait_content)."""
    expected = values_by_partition(read_all(source_bootstrap, source_topic))
    return wait_content(
        target_bootstrap, target_topic, expected, timeout=timeout, log=log, alive=alive
    )
