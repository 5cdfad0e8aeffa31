"""The registries' step of a switchover, and make_target_writable (which `mm2 failover
--schema-registry` runs too), with two registries behind httpx.MockTransport and the
switchover's Kafka reads faked: B's registry put in READWRITE after A->B is paused and before
B->A starts, said in the dry run without a change, a refusal marking the step failed while the
others run; A's mode only read."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import Any

import httpx
import pytest

from mm2.cli.switchover import render_report
from mm2.client import switchover as switchover_module
from mm2.client.lag import LagReport
from mm2.client.registries import make_target_writable
from mm2.client.switchover import switchover
from mm2.client.switchover_report import SwitchoverReport
from mm2.config import Flow, load_properties, parse_properties
from mm2.schemas.client import RegistryClient
from mm2.schemas.settings import RegistrySettings

BASE = """clusters = primary, backup
primary.bootstrap.servers = primary:9092
backup.bootstrap.servers = backup:9092
primary->backup.enabled = true
backup->primary.enabled = true
"""
REGISTRIES = """primary.schema.registry.url = http://registry-primary:8081
backup.schema.registry.url = http://registry-backup:8081
"""


def flows(extra: str = REGISTRIES) -> tuple[Flow, Flow]:
    config = load_properties(parse_properties(BASE + extra, "mm2.properties"), log_warnings=False)
    return config.flow("primary", "backup"), config.flow("backup", "primary")


class Registries:
    """Both registries' /mode (a host's mode None: no modes, 404), and every call, in order,
    into `log` (shared with the flows' state changes)."""

    def __init__(self, log: list[str], **modes: str | None) -> None:
        self.modes, self.log = modes, log
        self.status = 200

    def handle(self, request: httpx.Request) -> httpx.Response:
        host = request.url.host.removeprefix("registry-")
        self.log.append(f"{host}: {request.method} {request.url.path}")
        if self.status != 200:
            return httpx.Response(self.status, json={"error_code": 40101, "message": "no"})
        if request.url.path == "/subjects":
            return httpx.Response(200, json=[])
        if self.modes[host] is None:
            return httpx.Response(404)
        if request.method == "PUT":
            self.modes[host] = json.loads(request.content)["mode"]
        return httpx.Response(200, json={"mode": self.modes[host]})

    def open(self, config: Mapping[str, str]) -> RegistryClient:
        settings = RegistrySettings.from_config({**config, "requests.per.second": "0"})
        return RegistryClient(settings, transport=httpx.MockTransport(self.handle))


class Flows:
    def __init__(self, log: list[str], **states: str) -> None:
        self.states, self.log = states, log

    def state(self, source: str, target: str) -> str | None:
        return self.states.get(f"{source}_{target}")

    def pause(self, source: str, target: str) -> None:
        self.log.append(f"pause {source}->{target}")
        self.states[f"{source}_{target}"] = "PAUSED"

    def resume(self, source: str, target: str) -> None:
        self.log.append(f"resume {source}->{target}")
        self.states[f"{source}_{target}"] = "RUNNING"


class DrainedLag:
    """Stands in for LagReader: every partition copied, nothing moving."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def read(self) -> LagReport:
        return LagReport("primary->backup", 0)

    def close(self) -> None:
        pass


@pytest.fixture
def log(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """No Kafka: no group to move, a drained flow."""
    monkeypatch.setattr(switchover_module, "translate_all_groups", lambda *a, **k: [])
    monkeypatch.setattr(switchover_module, "mirrored_groups", lambda *a, **k: [])
    monkeypatch.setattr(switchover_module, "LagReader", DrainedLag)
    return []


def run(
    monkeypatch: pytest.MonkeyPatch, registries: Registries, flow: Flow, back: Flow, **kw: Any
) -> tuple[SwitchoverReport, list[str]]:
    writable = functools.partial(make_target_writable, open_client=registries.open)
    monkeypatch.setattr(switchover_module, "make_target_writable", writable)
    said: list[str] = []
    control = Flows(registries.log, primary_backup="RUNNING", backup_primary="PAUSED")
    report = switchover(flow, control, reverse_flow=back, say=said.append, poll_seconds=0.0, **kw)
    return report, said


def test_the_dry_run_shows_the_step_and_changes_no_mode(
    monkeypatch: pytest.MonkeyPatch, log: list[str]
) -> None:
    registries = Registries(log, primary="READWRITE", backup="IMPORT")
    report, said = run(monkeypatch, registries, *flows(), dry_run=True, start_reverse=True)
    assert [s.name for s in report.steps] == [
        "check",
        "lag now (dry run: no wait)",
        "registries (dry run)",
    ]
    assert registries.modes == {"primary": "READWRITE", "backup": "IMPORT"}
    assert log == ["backup: GET /mode", "primary: GET /mode"]
    assert any("backup's registry READWRITE, backup->primary resumed" in line for line in said)
    lines = report.steps[-1].said
    assert "is IMPORT: would be put in READWRITE" in lines[0]
    assert "backup->primary will translate schema IDs" in lines[1]
    assert "put it in IMPORT before backup->primary's first pass" in lines[1]


def test_the_target_is_made_writable_after_the_pause_and_before_the_way_back(
    monkeypatch: pytest.MonkeyPatch, log: list[str]
) -> None:
    registries = Registries(log, primary="IMPORT", backup="IMPORT")
    report, _ = run(monkeypatch, registries, *flows(), start_reverse=True, drain_timeout=5)
    assert [s.name for s in report.steps] == [
        "check",
        "drain",
        "groups",
        "stop",
        "registries",
        "reverse",
    ]
    assert registries.modes == {"primary": "IMPORT", "backup": "READWRITE"}
    assert log == [
        "pause primary->backup",
        "backup: GET /mode",
        "backup: PUT /mode",
        "primary: GET /mode",
        "resume backup->primary",
    ]
    assert "backup->primary will keep schema IDs" in report.steps[4].said[1]
    assert report.done and report.failed_steps == []


def test_a_registry_that_refuses_fails_its_step_and_the_way_back_still_starts(
    monkeypatch: pytest.MonkeyPatch, log: list[str]
) -> None:
    registries = Registries(log, primary="READWRITE", backup="IMPORT")
    registries.status = 401
    report, said = run(monkeypatch, registries, *flows(), start_reverse=True, drain_timeout=5)
    assert report.failed_steps == ["registries"] and not report.done
    assert "resume backup->primary" in log
    step = report.to_json()["steps"][4]  # type: ignore[index]
    assert step["failed"] is True
    refused = (
        "backup's registry: not made writable: schema registry "
        "http://registry-backup:8081: GET /mode: HTTP 401"
    )
    assert any(refused in line for line in said)
    text = render_report(report)
    assert "switchover of primary->backup: failed at registries (see what it said)" in text
    assert any(line.split() == ["registries", "0.0", "s", "FAILED"] for line in text.splitlines())


def test_a_flow_without_registries_has_no_such_step(
    monkeypatch: pytest.MonkeyPatch, log: list[str]
) -> None:
    registries = Registries(log)
    report, said = run(monkeypatch, registries, *flows(""), dry_run=True)
    assert [s.name for s in report.steps] == ["check", "lag now (dry run: no wait)"]
    assert log == [] and not any("registry" in line for line in said)


def test_without_modes_nothing_changes_and_the_way_back_translates(log: list[str]) -> None:
    registries = Registries(log, primary=None, backup=None)
    step = make_target_writable(*flows(), open_client=registries.open)
    assert not step.failed
    assert step.said[0].endswith("has no modes: it accepts registrations as it is")
    assert "backup->primary will translate schema IDs" in step.said[1]
    assert all(" PUT " not in call for call in log)


def test_a_way_back_that_mirrors_no_schemas_is_said(log: list[str]) -> None:
    registries = Registries(log, primary="READWRITE", backup="READWRITE")
    forward, _ = flows()
    step = make_target_writable(forward, None, open_client=registries.open)
    assert (
        step.said[1] == "no flow backup->primary mirrors schemas: schemas registered on "
        "backup stay there"
    )
    assert log == ["backup: GET /mode"]
