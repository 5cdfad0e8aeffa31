"""An unreachable cluster makes a few log lines a minute, not dozens a second.

connect-mirror-maker runs for a minute and a half with its source cluster at an address nothing
listens on (its target is a real broker, so the flows start and every client they make tries
the source), then gets SIGTERM. Before mm2.log collapsed repeats, librdkafka alone wrote 20-55
lines a second in this state.
"""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest

from tests.support.kafka import KafkaCluster

pytestmark = [pytest.mark.integration, pytest.mark.slow]

RUN_S = 90.0
# The last minute of the run, when start-up (up to 30 s reading REST changes) is over.
STEADY_S = 60.0
STEADY_LINES_MAX = 15
_STAMP = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) ")


def _unused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_an_unreachable_source_logs_a_few_lines_a_minute(
    backup: KafkaCluster, tmp_path: Path
) -> None:
    nowhere = f"127.0.0.1:{_unused_port()}"
    props = tmp_path / "mm2.properties"
    props.write_text(
        "clusters = primary, backup\n"
        f"primary.bootstrap.servers = {nowhere}\n"
        f"backup.bootstrap.servers = {backup.bootstrap_servers}\n"
        "primary->backup.enabled = true\n"
        "primary->backup.topics = .*\n"
        "replication.factor = 1\n"
        "offset-syncs.topic.replication.factor = 1\n"
        "heartbeats.topic.replication.factor = 1\n"
        "checkpoints.topic.replication.factor = 1\n"
        "offset.storage.replication.factor = 1\n"
        "config.storage.replication.factor = 1\n"
        f"mm2.configs.topic = mm2-configs.{tmp_path.name}\n"
        f"mm2.state.dir = {tmp_path / 'state'}\n"
        "listeners = http://127.0.0.1:0\n"
    )
    log_file = tmp_path / "mirror.log"
    mirror = subprocess.Popen(
        [sys.executable, "-m", "mm2.cli.mirror_maker", str(props), "--log-file", str(log_file)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        time.sleep(RUN_S)
        assert mirror.poll() is None, log_file.read_text()
        stopped_at = time.time()
        mirror.send_signal(signal.SIGTERM)
        code = mirror.wait(90)
        stop_took = time.time() - stopped_at
    finally:
        if mirror.poll() is None:
            mirror.kill()
            mirror.wait()
    text = log_file.read_text()
    raw_output = mirror.stdout.read().decode(errors="replace") if mirror.stdout else ""
    lines = text.splitlines()
    stamped = [
        (datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp(), line)
        for line in lines
        if (m := _STAMP.match(line))
    ]
    steady = [line for at, line in stamped if stopped_at - STEADY_S <= at < stopped_at]
    report = f"{len(lines)} lines in {RUN_S:.0f} s, {len(steady)} in the last minute:\n" + text
    # Everything went to the log file in the one format: nothing raw on stdout/stderr.
    assert raw_output.strip() == "", raw_output
    assert all(_STAMP.match(line) or line.startswith((" ", "\t", "Traceback")) for line in lines)
    assert len(steady) <= STEADY_LINES_MAX, report
    assert len(lines) <= 60, report
    # The errors name the cluster by alias and bootstrap servers, and the real cause.
    assert any(f"primary ({nowhere})" in line and "Connection refused" in line for line in lines), (
        report
    )
    # A quiet, bounded stop.
    assert code == 0, report
    assert stop_took < 45, report
    after = [line for at, line in stamped if at >= stopped_at]
    assert "Traceback" not in text, report
    assert len(after) <= 20, report
    print(f"log rate: {len(lines)} lines in {RUN_S:.0f} s; {len(steady)} in the last minute")
