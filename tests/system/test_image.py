"""The image end to end: docker/Dockerfile built with buildah (scripts/build-image.sh, as
`make image` builds it), then `connect-mirror-maker` run from it with `buildah run` (chroot
isolation, the host's network) between two local clusters, until records produced on the source
arrive on the target; then stopped with SIGTERM, cleanly.

Needs root, Debian's buildah and debootstrap, and the Kafka jars (`make kafka-jars`). Run by
`make image-test` only: `make test` leaves the `image` marker out. MM2_TEST_IMAGE=<name> uses
an image already built instead of building one."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

from tests.support.kafka import KafkaCluster, count, produce_numbered
from tests.support.mirror import free_port
from tests.support.paths import REPO
from tests.support.waiting import eventually, file_text

pytestmark = [
    pytest.mark.system,
    pytest.mark.image,
    pytest.mark.slow,
    pytest.mark.timeout(5400),  # a first build downloads a JRE and pyspark on a busy machine
]

TAG = "mm2"
PROPERTIES = "/etc/mm2/mm2.properties"  # the image's CMD


def _buildah(*args: str, timeout: float = 300) -> str:
    done = subprocess.run(
        ["buildah", *args], capture_output=True, text=True, check=False, timeout=timeout
    )
    assert done.returncode == 0, f"buildah {' '.join(args)}: {done.stderr[-3000:]}"
    return done.stdout.strip()


@pytest.fixture(scope="module")
def image() -> str:
    given = os.environ.get("MM2_TEST_IMAGE")
    if given:
        _buildah("inspect", "--type", "image", given)
        return given
    built = subprocess.run(
        [str(REPO / "scripts" / "build-image.sh"), TAG],
        capture_output=True,
        text=True,
        check=False,
        timeout=5000,
    )
    assert built.returncode == 0, (built.stdout + built.stderr)[-5000:]
    return TAG


@pytest.fixture
def container(image: str) -> Iterator[str]:
    """A working container from the image (buildah's, for `buildah run`), removed after."""
    name = f"mm2-image-test-{uuid.uuid4().hex[:8]}"
    _buildah("from", "--pull=never", "--name", name, image)
    try:
        yield name
    finally:
        _buildah("rm", name)


def _mirror_inside(buildah_run: int) -> psutil.Process:
    """The mirror's own process under `buildah run`: a SIGTERM to buildah is not passed on (it
    kills its child), so the stop goes to connect-mirror-maker's python itself, as a container
    engine's stop would send it to the container's first process."""

    def find() -> psutil.Process | None:
        for child in psutil.Process(buildah_run).children(recursive=True):
            line = child.cmdline()
            if line[:1] != ["buildah-chroot-exec"] and any(
                arg.endswith("/connect-mirror-maker") for arg in line
            ):
                return child
        return None

    return eventually(find, timeout=30, what="connect-mirror-maker under buildah run")


def test_the_image_mirrors_between_two_local_clusters_and_stops_cleanly(
    container: str,
    primary: KafkaCluster,
    backup: KafkaCluster,
    new_topic: Callable[..., str],
    tmp_path: Path,
) -> None:
    topic = new_topic(primary)
    produce_numbered(primary.bootstrap_servers, topic, b"before", 10)
    port = free_port()
    props = tmp_path / "mm2.properties"
    props.write_text(
        "clusters = primary, backup\n"
        f"primary.bootstrap.servers = {primary.bootstrap_servers}\n"
        f"backup.bootstrap.servers = {backup.bootstrap_servers}\n"
        "primary->backup.enabled = true\n"
        f"primary->backup.topics = {topic}\n"
        "replication.factor = 1\n"
        "checkpoints.topic.replication.factor = 1\n"
        "heartbeats.topic.replication.factor = 1\n"
        "offset-syncs.topic.replication.factor = 1\n"
        "mm2.state.dir = /var/lib/mm2\n"
        # the host's network: a port of its own, not 8083
        f"listeners = http://127.0.0.1:{port}\n",
        encoding="utf-8",
    )
    props.chmod(0o644)  # read by the image's user mm2
    mirrored = f"primary.{topic}"
    log_path = tmp_path / "mirror.log"
    run = ["buildah", "run", "--isolation", "chroot", "--network", "host"]
    with log_path.open("w") as out:
        started = time.monotonic()
        mount = f"{props}:{PROPERTIES}:ro"
        process = subprocess.Popen(
            [*run, "--volume", mount, container, "--", "connect-mirror-maker", PROPERTIES],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        try:
            eventually(
                lambda: count(backup.bootstrap_servers, mirrored) >= 10,
                timeout=900,
                interval=2,
                what=f"the 10 records on backup's {mirrored}",
                log=file_text(log_path),
            )
            first = time.monotonic() - started
            produce_numbered(primary.bootstrap_servers, topic, b"after", 10)
            eventually(
                lambda: count(backup.bootstrap_servers, mirrored) >= 20,
                timeout=300,
                interval=2,
                what=f"the 10 later records on backup's {mirrored}",
                log=file_text(log_path),
            )
            # the image's own HEALTHCHECK probe, in the same container
            probe = [*run, "--env", f"MM2_HEALTH_URL=http://127.0.0.1:{port}/health", container]
            probe += ["--", "python", "/usr/local/lib/mm2/healthcheck.py"]

            def healthy() -> bool:
                done = subprocess.run(probe, capture_output=True, check=False, timeout=120)
                return done.returncode == 0

            eventually(
                healthy,
                timeout=300,
                interval=5,
                what="the image's health probe to answer healthy",
                log=file_text(log_path),
            )
            print(f"\nthe image's mirror copied its first records {first:.0f} s after the start")
            _mirror_inside(process.pid).send_signal(signal.SIGTERM)
            code = process.wait(timeout=300)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    log = log_path.read_text(errors="replace")
    # buildah run exits with the process's own status (a death by a signal shows as 1)
    assert code == 0, f"exit {code}:\n{log[-3000:]}"
    assert "Traceback" not in log, log[-5000:]
    assert count(backup.bootstrap_servers, mirrored) == 20
