"""`mm2 failover --schema-registry`: the group's move as before, then the target's registry
(faked, like Kafka), said under the plan and in --json; a registry that fails exits 1 with
everything else printed. Without the option, a flow that mirrors schemas gets a reminder."""

from __future__ import annotations

import argparse
import functools
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from mm2.cli import offset_tools
from mm2.client.failover import Applied
from mm2.client.plan import FailoverPlan, PartitionMove
from mm2.client.recovery import RecoveryPoint
from mm2.client.registries import make_target_writable
from mm2.records import OffsetAndMetadata, TopicPartition
from mm2.schemas.client import RegistryClient
from mm2.schemas.settings import RegistrySettings

PROPERTIES = """clusters = primary, backup
primary.bootstrap.servers = primary:9092
backup.bootstrap.servers = backup:9092
primary->backup.enabled = true
primary.schema.registry.url = http://registry-primary:8081
backup.schema.registry.url = http://registry-backup:8081
"""


def registry(status: int, modes: dict[str, str]) -> Any:
    def handle(request: httpx.Request) -> httpx.Response:
        host = request.url.host.removeprefix("registry-")
        if status != 200:
            return httpx.Response(status, json={"error_code": 40101, "message": "Unauthorized"})
        if request.method == "PUT":
            modes[host] = json.loads(request.content)["mode"]
        return httpx.Response(200, json={"mode": modes[host]})

    def open_client(config: Any) -> RegistryClient:
        settings = RegistrySettings.from_config({**config, "requests.per.second": "0"})
        return RegistryClient(settings, transport=httpx.MockTransport(handle))

    return functools.partial(make_target_writable, open_client=open_client)


@pytest.fixture
def failover(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    """Runs `mm2 failover` with Kafka faked: the plan, the commit and the recovery point."""
    tp, remote = TopicPartition("orders", 0), TopicPartition("primary.orders", 0)
    plan = FailoverPlan(
        "failover",
        "app",
        "primary",
        "backup",
        "offset syncs",
        (PartitionMove(tp, 10, remote, 10, exact=True),),
    )
    monkeypatch.setattr(offset_tools, "plan_failover", lambda *a, **k: plan)
    monkeypatch.setattr(offset_tools, "target_group_admin", lambda *a, **k: None)
    applied = Applied({remote: OffsetAndMetadata(10)}, {})
    monkeypatch.setattr(offset_tools, "apply_failover", lambda *a, **k: applied)
    point = RecoveryPoint("primary->backup", 0, ())
    monkeypatch.setattr(offset_tools, "recovery_point", lambda *a, **k: point)
    path = tmp_path / "mm2.properties"
    path.write_text(PROPERTIES)

    def run(
        *options: str, status: int = 200, modes: dict[str, str] | None = None, back: bool = False
    ) -> int:
        monkeypatch.setattr(offset_tools, "make_target_writable", registry(status, modes or {}))
        parser = argparse.ArgumentParser()
        command = offset_tools.Failback() if back else offset_tools.Failover()
        command.add_arguments(parser)
        way = ["backup", "primary"] if back else ["primary", "backup"]
        args = parser.parse_args(
            ["--config", str(path), "--group", "app", "--from", way[0], "--to", way[1], *options]
        )
        return command.run(args)

    return run


def test_the_registry_is_made_writable_when_asked(
    failover: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    modes = {"backup": "IMPORT", "primary": "READWRITE"}
    assert failover("--schema-registry", modes=modes) == 0
    out = capsys.readouterr().out
    assert modes["backup"] == "READWRITE" and modes["primary"] == "READWRITE"
    assert "committed 1 partition(s) for group 'app' on 'backup'" in out
    assert (
        "schema registry:\n  backup's registry (http://registry-backup:8081): IMPORT -> "
        "READWRITE" in out
    )


def test_a_dry_run_says_and_changes_nothing(
    failover: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    modes = {"backup": "IMPORT", "primary": "READWRITE"}
    assert failover("--schema-registry", "--dry-run", "--json", modes=modes) == 0
    doc = json.loads(capsys.readouterr().out)
    assert modes["backup"] == "IMPORT" and doc["dry_run"] is True
    assert doc["schema_registry"]["failed"] is False
    assert "would be put in READWRITE" in doc["schema_registry"]["said"][0]


def test_a_registry_that_fails_exits_1_after_the_rest(
    failover: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    assert failover("--schema-registry", status=401) == 1
    out = capsys.readouterr().out
    assert "committed 1 partition(s)" in out and "recovery point of primary->backup" in out
    assert (
        "backup's registry: not made writable: schema registry "
        "http://registry-backup:8081: GET /mode: HTTP 401" in out
    )


def test_without_the_option_no_registry_is_asked_and_a_reminder_is_printed(
    failover: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    assert failover(status=500) == 0  # a registry call would fail the command
    out = capsys.readouterr().out
    assert (
        "primary->backup mirrors schemas: when producers move to backup, run this with "
        "--schema-registry" in out
    )


def test_a_failback_makes_the_original_side_writable(
    failover: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    modes = {"backup": "READWRITE", "primary": "IMPORT"}  # primary kept backup's IDs meanwhile
    assert failover("--schema-registry", modes=modes, back=True) == 0
    out = capsys.readouterr().out
    assert modes == {"backup": "READWRITE", "primary": "READWRITE"}
    assert "primary's registry (http://registry-primary:8081): IMPORT -> READWRITE" in out
    assert "primary->backup will translate schema IDs: backup's registry" in out
