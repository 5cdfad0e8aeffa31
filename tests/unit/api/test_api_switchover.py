"""POST and GET /flows/{source}/{target}/switchover, with the switchover's steps faked (the
steps themselves: tests/unit/client/test_switchover_steps.py; on brokers:
tests/integration/test_switchover.py)."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from fastapi.testclient import TestClient

from mm2.client.failover import Applied
from mm2.client.plan import FailoverError, FailoverPlan, PartitionMove
from mm2.client.switchover_report import FlowControl, SwitchoverError, SwitchoverReport
from mm2.config import Flow
from mm2.records import OffsetAndMetadata, TopicPartition
from mm2.runtime import flow_admin
from mm2.runtime.mirror_maker import MirrorMaker
from tests.support.waiting import eventually


class FakeRun:
    """Stands in for mm2.client.switchover.switchover; holds until released."""

    def __init__(self, *, fail: str = "") -> None:
        self.release = threading.Event()
        self.calls: list[dict[str, Any]] = []
        self.fail = fail

    def __call__(self, flow: Flow, control: FlowControl, **kwargs: Any) -> SwitchoverReport:
        self.calls.append(
            {
                "flow": flow.name,
                "state": control.state("primary", "backup"),
                **{k: v for k, v in kwargs.items() if k != "say"},
            }
        )
        kwargs["say"]("[check]")
        self.release.wait(30)
        report = SwitchoverReport(flow.name, kwargs["dry_run"], done=not self.fail)
        if self.fail:
            raise SwitchoverError(self.fail, report)
        return report


def test_a_switchover_is_a_dry_run_unless_asked_and_is_followed_with_get(
    mirror: MirrorMaker, client: TestClient
) -> None:
    run = FakeRun()
    mirror.switchovers._run = run
    assert client.get("/flows/primary/backup/switchover").status_code == 404
    started = client.post("/flows/primary/backup/switchover")
    assert started.status_code == 202, started.text
    assert started.json()["dry_run"] is True and started.json()["running"] is True
    eventually(lambda: run.calls, timeout=10, what="the job started")
    # one at a time per flow
    again = client.post("/flows/primary/backup/switchover", json={"dry_run": False})
    assert again.status_code == 409, again.text
    run.release.set()
    body = eventually(
        lambda: (
            (b := client.get("/flows/primary/backup/switchover").json())["running"] is False and b
        ),
        timeout=10,
        what="the job finished",
    )
    assert body["said"] == ["[check]"] and body["error"] == ""
    assert body["report"]["done"] is True and body["report"]["dry_run"] is True
    (call,) = run.calls
    assert call["flow"] == "primary->backup" and call["dry_run"] is True
    assert call["state"] is not None  # the process's own flows are its FlowControl
    assert call["reverse_flow"].name == "backup->primary"  # disabled in the file, but known
    assert call["reverse_flow"].enabled is False


def test_a_switchover_that_stops_says_why_and_keeps_its_report(
    mirror: MirrorMaker, client: TestClient
) -> None:
    run = FakeRun(fail="not drained within 5 s")
    run.release.set()
    mirror.switchovers._run = run
    body = {"dry_run": False, "start_reverse": True, "drain_timeout_seconds": 5}
    assert client.post("/flows/primary/backup/switchover", json=body).status_code == 202
    done = eventually(
        lambda: (
            (b := client.get("/flows/primary/backup/switchover").json())["running"] is False and b
        ),
        timeout=10,
        what="the job finished",
    )
    assert done["error"] == "not drained within 5 s" and done["report"]["done"] is False
    assert run.calls[0]["drain_timeout"] == 5 and run.calls[0]["start_reverse"] is True


def test_bad_switchover_requests_are_refused(client: TestClient) -> None:
    assert client.post("/flows/primary/nowhere/switchover").status_code == 404
    bad = client.post("/flows/primary/backup/switchover", json={"dry_run": False, "typo": 1})
    assert bad.status_code in (400, 422) and "typo" in bad.text
    bad = client.post("/flows/primary/backup/switchover", json={"drain_timeout_seconds": -1})
    assert bad.status_code in (400, 422) and "drain_timeout_seconds" in bad.text


def test_a_groups_failover_over_rest_commits_or_says_why_not(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    move = PartitionMove(
        TopicPartition("orders", 0),
        10,
        TopicPartition("primary.orders", 0),
        12,
        exact=True,
        rereads_at_most=0,
    )
    plan = FailoverPlan("failover", "app", "primary", "backup", "offset syncs", (move,))
    monkeypatch.setattr(flow_admin, "plan_failover", lambda flow, group, **kw: plan)
    monkeypatch.setattr(flow_admin, "target_group_admin", lambda flow, timeout: None)
    committed = {TopicPartition("primary.orders", 0): OffsetAndMetadata(12, "")}
    monkeypatch.setattr(
        flow_admin, "apply_failover", lambda plan, admin, force: Applied(committed, {})
    )
    body = client.post("/flows/primary/backup/groups/app/failover").json()
    assert body["applied"]["committed"] == [
        {"topic": "primary.orders", "partition": 0, "offset": 12}
    ]

    def busy(plan: FailoverPlan, admin: object, force: bool) -> Applied:
        raise FailoverError("group 'app' is active on 'backup': state Stable, 1 member(s)")

    monkeypatch.setattr(flow_admin, "apply_failover", busy)
    refused = client.post("/flows/primary/backup/groups/app/failover")
    assert refused.status_code == 409 and "is active on 'backup'" in refused.text
    assert client.post("/flows/primary/nowhere/groups/app/failover").status_code == 404
