"""What /ui shows for a failover drill, without brokers: each flow's partitions (owner and lag
in seconds), its groups with failover readiness as `mm2 failover --dry-run` would judge it,
and the hooks a headless browser reads (tests/integration/test_ui_browser.py runs the page)."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from mm2.api.app import create_app
from mm2.api.schemas import failover_readiness
from mm2.client.lag import LagReport, PartitionLag
from mm2.client.plan import FailoverPlan, PartitionMove
from mm2.client.recovery import PartitionAtRisk, RecoveryPoint
from mm2.copy.routes import Route
from mm2.records import TopicPartition
from mm2.runtime.mirror_maker import MirrorMaker


def move(
    topic: str,
    partition: int,
    commit: int,
    to: int | None,
    *,
    now: int | None = None,
    mirrored: bool = True,
    note: str = "exact",
) -> PartitionMove:
    target = TopicPartition(f"primary.{topic}", partition) if mirrored else None
    return PartitionMove(
        TopicPartition(topic, partition),
        commit,
        target,
        to,
        exact=to == commit,
        rereads_at_most=0 if to is not None else None,
        note=note,
        current_target_offset=now,
    )


def plan(*moves: PartitionMove, notes: tuple[str, ...] = ()) -> FailoverPlan:
    return FailoverPlan("failover", "app", "primary", "backup", "offset syncs", moves, notes)


def test_a_group_is_ready_when_every_partition_the_flow_mirrors_is_translated() -> None:
    ready, why = failover_readiness(plan(move("orders", 0, 10, 10), move("orders", 1, 5, 5)))
    assert ready
    assert why == (
        "2 partition(s) translated from offset syncs, 2 exact; records re-read: "
        "at most 0; 2 to commit"
    )
    # a topic the flow does not mirror is left alone by a failover: no reason to wait
    ready, why = failover_readiness(
        plan(move("orders", 0, 10, 10), move("local", 0, 3, None, mirrored=False, note="no"))
    )
    assert ready and why.endswith("1 not mirrored by this flow: left alone")
    # a commit already there is not committed again; one ahead is kept
    ready, why = failover_readiness(
        plan(move("orders", 0, 10, 10, now=10), move("orders", 1, 5, 5, now=9))
    )
    assert ready and "0 to commit; 1 kept: the target's commit is ahead" in why


def test_a_group_is_not_ready_while_a_mirrored_partition_cannot_be_translated() -> None:
    waiting = "no offset sync yet: primary->backup has not mirrored this partition"
    ready, why = failover_readiness(
        plan(move("orders", 0, 10, 10), move("orders", 1, 5, None, note=waiting))
    )
    assert not ready and why == f"1 of 2 partition(s) not translated: {waiting}"
    none = "no offset syncs topic for primary->backup"
    ready, why = failover_readiness(plan(move("orders", 0, 10, None, note=none), notes=(none,)))
    assert not ready and why == f"nothing to commit: no partition translated ({none})"
    ready, why = failover_readiness(plan(move("local", 0, 3, None, mirrored=False, note="-")))
    assert not ready and "none of its partitions is mirrored" in why


def test_the_groups_view_has_both_sides_lag_and_readiness(
    mirror: MirrorMaker, monkeypatch: pytest.MonkeyPatch
) -> None:
    plans = [
        plan(
            move("orders", 0, 10, 8, now=3, note="after the nearest sync below 10"),
            move("orders", 1, 5, None, note="no offset sync yet"),
        )
    ]
    report = LagReport("primary->backup", 1, (PartitionLag("orders", 0, 25, 25, 0, 0.0),))
    monkeypatch.setattr(mirror.flows, "group_offsets", lambda source, target, timeout=15.0: plans)
    monkeypatch.setattr(mirror.flows, "lag", lambda source, target: report)
    body = TestClient(create_app(mirror)).get("/flows/primary/backup/groups/offsets").json()
    (group,) = body["groups"]
    assert group["group"] == "app" and group["ready"] is False
    assert group["why"] == "1 of 2 partition(s) not translated: no offset sync yet"
    first, second = group["partitions"]
    assert (first["source_offset"], first["source_log_end"], first["source_lag"]) == (10, 25, 15)
    assert (first["target_offset"], first["current_target_offset"]) == (8, 3)
    assert first["target_behind"] == 5
    assert (second["source_lag"], second["target_behind"]) == (None, None)  # unknown, not 0
    assert group["basis"] == "offset syncs"  # the rest of translate-offsets --json, as it was


def test_partitions_say_their_owner_task_and_lag_in_seconds(
    mirror: MirrorMaker, monkeypatch: pytest.MonkeyPatch
) -> None:
    mirror.metrics.set_routes("primary", "backup", {"orders": Route("orders", "primary.orders", 2)})
    mirror.metrics.set_owners("primary", "backup", {("orders", 0): 1})
    report = LagReport(
        "primary->backup",
        1,
        (PartitionLag("orders", 0, 50, 20, 30, 4.25), PartitionLag("orders", 1, 9, 9, 0, 0.0)),
    )
    monkeypatch.setattr(mirror.flows, "lag", lambda source, target: report)
    rows = TestClient(create_app(mirror)).get("/flows/primary/backup/partitions").json()
    worst = rows[0]
    assert (worst["partition"], worst["lag_records"], worst["lag_seconds"]) == (0, 30, 4.25)
    assert worst["owner"] == "w1 copy task 1" and rows[1]["owner"] is None


def test_the_page_has_the_drill_views_and_their_hooks(mirror: MirrorMaker) -> None:
    client = TestClient(create_app(mirror))
    page = client.get("/ui").text
    for hook in (
        'id="details"',
        'class="partitions"',
        'class="groups"',
        'id="lag-chart"',
        'id="rate-chart"',
        'data-points="0"',
        'data-switchover="none"',
        'class="switchover-log"',
        'class="start-reverse"',
        'class="recovery-summary"',
        'class="recovery"',
    ):
        assert hook in page, hook
    script = client.get("/ui/assets/app.js").text
    for hook in (
        '"data-loaded"',
        '"data-flow"',
        '"data-task"',
        '"data-partition"',
        '"data-lag"',
        '"data-group"',
        '"data-ready"',
        '"data-points"',
        '"data-read"',
        "/history`",
        "/partitions`",
        "/groups/offsets`",
        "/switchover`",
        "/failover`",
        '"data-switchover"',
        "/recovery-point`",
        '"data-at-risk"',
        '"data-unknown-since"',
    ):
        assert hook in script, hook
    # buttons only where the action applies: none on a DISABLED or UNASSIGNED flow
    actions = re.search(r"const ACTIONS = \{(.*?)\};", script, re.S)
    assert actions is not None
    table = dict(re.findall(r"(\w+): \[([^\]]*)\]", actions.group(1)))
    assert table == {
        "pause": '"RUNNING", "DEGRADED"',
        "resume": '"PAUSED", "STOPPED"',
        "restart": '"RUNNING", "DEGRADED", "FAILED"',
    }
    # a switchover for real and a group's failover ask first; the dry run does not
    start = script[script.index("async function startSwitchover") :]
    start = start[: start.index("\n}\n")]
    assert "if (!dryRun)" in start and "window.confirm" in start
    failover = script[script.index("function failoverButton") :]
    assert "window.confirm" in failover[: failover.index("\n}\n")]
    switchable = re.search(r"const SWITCHOVER_STATES = \[(.*?)\];", script)
    assert switchable is not None and switchable.group(1) == '"RUNNING", "DEGRADED", "PAUSED"'
    # every request goes to this process's own API (its authentication): nothing elsewhere
    assert not re.search(r"https?://", script)


def test_the_recovery_point_is_a_bound_only_from_ends_read_for_it(
    mirror: MirrorMaker, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = 1_700_000_000_000
    current = RecoveryPoint(
        "primary->backup",
        t,
        (
            PartitionAtRisk("orders", 0, 120, 150, t, current=True),
            PartitionAtRisk("orders", 1, None, 40, t, current=True, log_start=0),
        ),
    )
    monkeypatch.setattr(
        mirror.flows, "recovery_point", lambda source, target, timeout=15.0: current
    )
    client = TestClient(create_app(mirror))
    body = client.get("/flows/primary/backup/recovery-point").json()
    assert (body["at_risk_at_most"], body["unknown_since_ms"]) == (70, None)
    assert body["partitions"][0] == {
        "topic": "orders",
        "partition": 0,
        "copied_to": 120,
        "source_end": 150,
        "ends_read_at_ms": t,
        "current": True,
        "at_risk_at_most": 30,
        "unknown_since_ms": None,
        "uncopied_below_end": 30,
    }
    assert body["summary"] == current.summary()
    # The source did not answer: no sum of what is known passes for a bound.
    stale = RecoveryPoint(
        "primary->backup",
        t + 60_000,
        (
            PartitionAtRisk("orders", 0, 120, 150, t + 2_000),
            PartitionAtRisk("orders", 1, 40, None, None),
        ),
        "source primary: timed out",
    )
    monkeypatch.setattr(mirror.flows, "recovery_point", lambda source, target, timeout=15.0: stale)
    body = client.get("/flows/primary/backup/recovery-point").json()
    assert body["at_risk_at_most"] is None
    assert (body["unknown_since_ms"], body["unknown_partitions"]) == (None, 2)  # one never read
    assert body["uncopied_below_ends"] == 30
    assert [p["at_risk_at_most"] for p in body["partitions"]] == [None, None]
    assert body["partitions"][0]["unknown_since_ms"] == t + 2_000
    assert body["source_problem"] == "source primary: timed out"
    assert body["summary"] == stale.summary()
