"""`kafka-mirror-maker` and `mm2 migrate-mm1` as MirrorMaker 1 users run them, in subprocesses:
the printed mm2.properties loads in `connect-mirror-maker --print-config`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

BIN = Path(sys.executable).parent


def run(script: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    path = BIN / script
    assert path.exists(), f"console script not installed at {path}"
    return subprocess.run([str(path), *args], capture_output=True, text=True, timeout=120, cwd=cwd)


@pytest.fixture
def client_files(tmp_path: Path) -> list[str]:
    # Seed 004 (HDInsight) with brokers instead of ZooKeeper, as MirrorMaker 1 needs since 2.0.
    (tmp_path / "consumer.properties").write_text(
        "bootstrap.servers=source-kafka:9092\ngroup.id=mirrorgroup\n", encoding="utf-8"
    )
    (tmp_path / "producer.properties").write_text(
        "bootstrap.servers=dest-kafka:9092\ncompression.type=none\n", encoding="utf-8"
    )
    return ["--consumer.config", "consumer.properties", "--producer.config", "producer.properties"]


def test_migrate_mm1_output_loads_in_print_config(tmp_path: Path, client_files: list[str]) -> None:
    done = run(
        "mm2",
        "migrate-mm1",
        *client_files,
        "--whitelist",
        "testtopic",
        "--num.streams",
        "4",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    (tmp_path / "mm2.properties").write_text(done.stdout, encoding="utf-8")
    shown = run("connect-mirror-maker", "mm2.properties", "--print-config", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    [flow] = json.loads(shown.stdout)["flows"]
    assert (flow["source"], flow["target"], flow["enabled"]) == (
        "mirrorgroup-source",
        "mirrorgroup-target",
        True,
    )
    source = flow["connectors"]["MirrorSourceConnector"]
    assert source["topics"] == "testtopic"
    assert source["tasks.max"] == "4"
    assert source["progress.group.id"] == "mirrorgroup"
    assert source["replication.policy.class"].endswith("IdentityReplicationPolicy")


def test_message_handler_is_refused_in_one_error_line(
    tmp_path: Path, client_files: list[str]
) -> None:
    done = run(
        "kafka-mirror-maker",
        *client_files,
        "--whitelist",
        ".*",
        "--message.handler",
        "com.example.Handler",
        cwd=tmp_path,
    )
    assert done.returncode == 2
    errors = [line for line in done.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1, done.stderr
    assert errors[0].startswith("kafka-mirror-maker: error: --message.handler: refused: ")
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "mm2-state").exists()  # nothing written, nothing started
