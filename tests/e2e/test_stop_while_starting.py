"""A SIGTERM while the mirror is still starting ends it soon with exit 0, whatever is
unreachable: nothing waits out a cluster that is not there (up to 30 s for the REST changes),
nor a Spark context still being made, once a stop was asked. The file's listener comes from a
config provider, which is resolved before the listener is checked."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.mirror import free_port
from tests.support.waiting import eventually

SCRIPT = Path(sys.executable).parent / "connect-mirror-maker"

pytestmark = pytest.mark.e2e


# The REST changes are waited for up to 30 s: a stop that waited them out would take that long.
WAITED_OUT_S = 30.0


@pytest.mark.parametrize("after_s", [0.0, 5.0])
def test_sigterm_while_starting_with_both_clusters_unreachable_ends_soon(
    tmp_path: Path, after_s: float
) -> None:
    # Ports nothing listens on: every Kafka call waits for a cluster that never answers.
    dead_a, dead_b = free_port(), free_port()
    props = tmp_path / "mm2.properties"
    props.write_text(
        "clusters = primary, backup\n"
        f"primary.bootstrap.servers = 127.0.0.1:{dead_a}\n"
        f"backup.bootstrap.servers = 127.0.0.1:{dead_b}\n"
        "primary->backup.enabled = true\n"
        f"mm2.state.dir = {tmp_path / 'state'}\n"
        # Resolved before the listener is checked: one file serves nodes on other ports.
        "config.providers = env\n"
        "config.providers.env.class = "
        "org.apache.kafka.common.config.provider.EnvVarConfigProvider\n"
        "listeners = http://127.0.0.1:${env:MM2_TEST_REST_PORT}\n",
        encoding="utf-8",
    )
    env = {**os.environ, "MM2_TEST_REST_PORT": str(free_port())}
    log_path = tmp_path / "mirror.log"
    with log_path.open("w") as out:
        process = subprocess.Popen(
            [str(SCRIPT), str(props)], stdout=out, stderr=subprocess.STDOUT, env=env
        )
        try:
            # Still starting: reading the REST changes kept in Kafka, Spark being made.
            eventually(
                lambda: "reading the REST changes" in log_path.read_text(),
                timeout=120,
                what="the mirror to start reading its REST changes",
            )
            time.sleep(after_s)
            process.send_signal(signal.SIGTERM)
            asked = time.monotonic()
            code = process.wait(timeout=60)
            took = time.monotonic() - asked
        finally:
            if process.poll() is None:
                process.kill()
    log = log_path.read_text()
    assert code == 0, log[-3000:]
    assert took < WAITED_OUT_S - 5, f"stopped {took:.1f} s after SIGTERM:\n{log[-3000:]}"
    assert "still stopping" not in log, log[-3000:]
