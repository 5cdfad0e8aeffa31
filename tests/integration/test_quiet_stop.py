"""SIGTERM with the target cluster down ends the mirror quietly and soon: no stack trace, and
no wait for a cluster that is not there."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mm2.kafka.producer import RecordProducer
from mm2.kafka.topics import NewTopicSpec, TopicAdmin
from tests.support.clusters import ClusterPair
from tests.support.waiting import eventually, file_text

pytestmark = [pytest.mark.integration, pytest.mark.slow]

_STAMP = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} [A-Z]+ [\w.\-]+: ")


def test_sigterm_with_the_target_down_is_quiet_and_bounded(
    tmp_path: Path, cluster_pair: ClusterPair
) -> None:
    clusters = cluster_pair("primary", "backup", workdir=tmp_path / "clusters")
    primary = clusters["primary"].bootstrap_servers
    backup = clusters["backup"].bootstrap_servers
    TopicAdmin({"bootstrap.servers": primary}).create_topics([NewTopicSpec("orders", 3)])
    props = tmp_path / "mm2.properties"
    props.write_text(
        "clusters = primary, backup\n"
        f"primary.bootstrap.servers = {primary}\n"
        f"backup.bootstrap.servers = {backup}\n"
        "primary->backup.enabled = true\n"
        "primary->backup.topics = orders\n"
        "replication.factor = 1\n"
        "offset-syncs.topic.replication.factor = 1\n"
        "heartbeats.topic.replication.factor = 1\n"
        "checkpoints.topic.replication.factor = 1\n"
        "offset.storage.replication.factor = 1\n"
        "config.storage.replication.factor = 1\n"
        f"mm2.state.dir = {tmp_path / 'state'}\n"
        "listeners = http://127.0.0.1:0\n"
        "tasks.max = 2\n"
    )
    log = tmp_path / "mirror.log"
    mirror = subprocess.Popen(
        [sys.executable, "-m", "mm2.cli.mirror_maker", str(props), "--log-file", str(log)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # the signal reaches the mirror alone, not Spark's JVM
    )
    try:
        producer = RecordProducer({"bootstrap.servers": primary})
        for i in range(3000):
            producer.send("orders", b"k", b"v" * 100, partition=i % 3)
        producer.flush()
        eventually(  # the copy tasks say so once they run
            lambda: "copying orders-" in log.read_text(errors="replace"),
            timeout=240,
            what="'copying orders-' in the mirror's log",
            interval=1,
            log=file_text(log),
        )
        clusters["backup"].halt()
        for i in range(3000):  # more to copy, with nowhere to copy it
            producer.send("orders", b"k", b"v" * 100, partition=i % 3)
        producer.flush()
        time.sleep(15)
        mark = len(log.read_text(errors="replace").splitlines())
        began = time.monotonic()
        mirror.send_signal(signal.SIGTERM)
        code = mirror.wait(120)
        took = time.monotonic() - began
    finally:
        if mirror.poll() is None:
            mirror.kill()
            mirror.wait()
    lines = log.read_text(errors="replace").splitlines()
    after = lines[mark:]
    report = f"stop took {took:.1f} s, {len(after)} lines after SIGTERM:\n" + "\n".join(after)
    assert code == 0, report
    assert took < 40, report
    assert len(after) <= 25, report
    assert not any("Traceback" in line for line in after), report
    assert all(_STAMP.match(line) for line in after), report
    assert after[-1].endswith("stopped cleanly"), report
    print(f"quiet stop: {took:.1f} s, {len(after)} lines after SIGTERM")
