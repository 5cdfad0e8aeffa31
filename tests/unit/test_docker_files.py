"""The docker/ files for users: the compose file is well formed and runs the mirror."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

DOCKER = Path(__file__).resolve().parents[2] / "docker"


def test_compose_defines_two_clusters_and_the_mirror() -> None:
    compose = yaml.safe_load((DOCKER / "compose.yaml").read_text(encoding="utf-8"))
    services = compose["services"]
    assert set(services) == {"primary", "backup", "mirror"}
    assert services["mirror"]["build"]["dockerfile"] == "docker/Dockerfile"
    assert set(services["mirror"]["depends_on"]) == {"primary", "backup"}
    for name in ("primary", "backup"):
        env = services[name]["environment"]
        assert env["KAFKA_PROCESS_ROLES"] == "broker,controller"
        assert env["KAFKA_ADVERTISED_LISTENERS"] == f"PLAINTEXT://{name}:9092"


def test_dockerfile_runs_connect_mirror_maker() -> None:
    text = (DOCKER / "Dockerfile").read_text(encoding="utf-8")
    assert 'ENTRYPOINT ["connect-mirror-maker"]' in text
    assert "openjdk-17" in text


def _compose_available() -> bool:
    if shutil.which("docker") is None:
        return False
    probe = subprocess.run(["docker", "compose", "version"], capture_output=True, check=False)
    return probe.returncode == 0


@pytest.mark.skipif(not _compose_available(), reason="no `docker compose` client here")
def test_docker_compose_config_accepts_the_file() -> None:
    result = subprocess.run(
        ["docker", "compose", "-f", str(DOCKER / "compose.yaml"), "config", "--quiet"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr


def test_compose_mm2_properties_resolves_to_one_enabled_flow() -> None:
    from mm2.config import load

    config = load(DOCKER / "mm2.properties")
    assert [f.name for f in config.enabled_flows] == ["primary->backup"]
    assert config.flow("primary", "backup").replication_factor == 1
