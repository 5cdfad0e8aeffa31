"""A leader and a standby: two connect-mirror-maker processes with the same mm2.properties.

They elect one leader for the target cluster through a consumer group on it; the standby
answers REST (reads, and changes it forwards to the leader), sees the same flows because REST
changes live in Kafka, and takes over when the leader is killed -9, with nothing lost or
copied twice for a read_committed reader.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.kafka import count
from tests.support.mirror import MirrorProcess
from tests.support.standby import (
    all_copied,
    copied_once,
    leader_urls,
    leaders,
    leads,
    logs_of,
    steady_load,
    two_nodes,
)
from tests.support.waiting import eventually

pytestmark = [pytest.mark.integration, pytest.mark.slow]
log = logging.getLogger(__name__)

PARTITIONS = 3
SOURCE = "primary.backup.MirrorSourceConnector"


def test_standby_serves_rest_and_takes_over_from_a_killed_leader(
    primary: Any, backup: Any, new_topic: Any, tmp_path: Path
) -> None:
    topic = new_topic(primary, PARTITIONS, prefix="standby")
    mirrors, urls = two_nodes(tmp_path, primary, backup, topic)
    remote = f"primary.{topic}"
    load = steady_load(primary, topic, PARTITIONS)

    both_logs = logs_of(mirrors)

    stack = contextlib.ExitStack()
    try:
        eventually(
            lambda: leads(urls[0]) or leads(urls[1]),
            timeout=180,
            what="a leader for backup",
            log=both_logs,
        )
        leader_i = 0 if leads(urls[0]) else 1
        standby_i = 1 - leader_i
        leader, standby = mirrors[leader_i], mirrors[standby_i]
        eventually(
            lambda: bool(leaders(urls[standby_i]).get("backup")),
            timeout=60,
            what="the standby to learn the leader",
            log=both_logs,
        )
        seen = leaders(urls[standby_i])["backup"]
        assert seen is not None and seen["url"] == urls[leader_i], seen
        assert not leads(urls[standby_i]), "two leaders for one cluster"

        load.start()
        eventually(
            lambda: count(backup.bootstrap_servers, remote) > 300,
            timeout=180,
            what="records copied by the leader",
            log=both_logs,
        )

        # The standby answers reads with the leader's state, and forwards changes.
        api = stack.enter_context(httpx.Client(base_url=urls[standby_i], timeout=60))
        flows = {(f["source"], f["target"]): f for f in api.get("/flows").json()}
        # The list shows the leader's view of the flow it runs: its state, its lag.
        assert flows[("primary", "backup")]["runs_on"] == urls[leader_i], flows
        assert flows[("primary", "backup")]["state"] in ("RUNNING", "DEGRADED"), flows
        assert api.put("/flows/primary/backup/pause").status_code == 202
        on_leader = stack.enter_context(httpx.Client(base_url=urls[leader_i], timeout=60))
        eventually(
            lambda: (
                on_leader.get(f"/connectors/{SOURCE}/status").json()["connector"]["state"]
                == "PAUSED"
            ),
            timeout=60,
            what="the pause forwarded to the leader",
            log=both_logs,
        )
        assert api.get(f"/connectors/{SOURCE}/status").json()["connector"]["state"] == "PAUSED"
        assert api.put("/flows/primary/backup/resume").status_code == 202
        eventually(
            lambda: (
                on_leader.get(f"/connectors/{SOURCE}/status").json()["connector"]["state"]
                == "RUNNING"
            ),
            timeout=60,
            what="the resume forwarded to the leader",
            log=both_logs,
        )
        # A switchover asked of the standby runs where the flow runs; either node answers it.
        started = api.post("/flows/primary/backup/switchover", json={"dry_run": True})
        assert started.status_code == 202, started.text
        eventually(
            lambda: not on_leader.get("/flows/primary/backup/switchover").json()["running"],
            timeout=120,
            what="the dry run to end on the leader",
            log=both_logs,
        )
        job = api.get("/flows/primary/backup/switchover").json()
        assert job == on_leader.get("/flows/primary/backup/switchover").json()
        assert job["dry_run"] and not job["error"] and job["report"] is not None, job
        # The state read where the flow runs (this standby's own view says UNASSIGNED).
        states = {"primary->backup: RUNNING", "primary->backup: DEGRADED"}
        assert states & set(job["said"]), job

        before = count(backup.bootstrap_servers, remote)
        leader.kill9()
        killed = time.monotonic()
        log.info("leader killed -9 with %d records on the target", before)
        eventually(
            lambda: leads(urls[standby_i]), timeout=120, what="the standby elected", log=both_logs
        )
        elected = time.monotonic() - killed
        eventually(
            lambda: count(backup.bootstrap_servers, remote) > before + 300,
            timeout=180,
            what="copying resumed on the standby",
            log=both_logs,
        )
        resumed = time.monotonic() - killed
        log.info("standby elected %.1f s and copying %.1f s after the kill", elected, resumed)
        log.info(
            "the standby on leadership:\n%s",
            "\n".join(line for line in standby.log().splitlines() if "lead" in line),
        )
        # The pause and resume made over REST are in Kafka: the new leader runs the source
        # connector as the old one left it.
        status = api.get(f"/connectors/{SOURCE}/status").json()
        assert status["connector"]["state"] == "RUNNING", status

        all_copied(load, backup, remote, both_logs)
        assert standby.stop() == 0, standby.log()[-3000:]
    finally:
        stack.close()
        load.stop()
        for mirror in mirrors:
            if mirror.process.poll() is None:
                mirror.stop()

    copied_once(primary, backup, topic)
    assert count(primary.bootstrap_servers, topic) == load.sent


def test_a_paused_leader_fences_nothing_and_a_restarted_node_takes_nothing(
    primary: Any, backup: Any, new_topic: Any, tmp_path: Path
) -> None:
    """A leader SIGSTOPped past its session (a stalled VM) comes back to find a new leader:
    its planner and copy tasks check the leader epoch in the config topic and start nothing, so
    they fence none of the new leader's copy tasks, and the new leader keeps the lead. Then the
    standby restarts (as in a rolling restart): the leader keeps the lead throughout."""
    topic = new_topic(primary, PARTITIONS, prefix="paused")
    remote = f"primary.{topic}"
    mirrors, urls = two_nodes(tmp_path, primary, backup, topic)
    load = steady_load(primary, topic, PARTITIONS)

    both_logs = logs_of(mirrors)

    try:
        eventually(
            lambda: len(leader_urls(urls)) == 1, timeout=180, what="one leader", log=both_logs
        )
        first = urls.index(leader_urls(urls)[0])
        paused, other = mirrors[first], mirrors[1 - first]
        load.start()
        eventually(
            lambda: count(backup.bootstrap_servers, remote) > 300,
            timeout=180,
            what="records copied by the first leader",
            log=both_logs,
        )

        paused.signal_tree(signal.SIGSTOP)
        eventually(
            lambda: leads(urls[1 - first]), timeout=120, what="the standby elected", log=both_logs
        )
        before = count(backup.bootstrap_servers, remote)
        eventually(
            lambda: count(backup.bootstrap_servers, remote) > before + 300,
            timeout=180,
            what="the new leader copying",
            log=both_logs,
        )
        time.sleep(10)  # the paused leader stays away well past its 6 s session
        paused.signal_tree(signal.SIGCONT)
        eventually(
            lambda: "no longer leader of backup" in paused.log(),
            timeout=120,
            what="the resumed leader stepping down",
            log=both_logs,
        )
        # The new leader keeps the lead, and the resumed one never leads again.
        for _ in range(15):
            assert leader_urls(urls) == [urls[1 - first]], both_logs()
            time.sleep(1)
        assert paused.log().count("now leader of backup") == 1, paused.log()[-4000:]
        # Its planner checked the epoch and fenced nothing: the new leader's copy tasks were
        # never fenced (before, the resumed leader's new epoch fenced them).
        assert "fenced by a newer holder" not in other.log(), other.log()[-4000:]

        # A rolling restart's first step: the standby (the paused one) restarts; the leader
        # keeps the lead while it stops, starts and joins again.
        assert paused.stop() == 0, paused.log()[-3000:]
        restarted = MirrorProcess(paused.log_path.parent / "mm2.properties")
        mirrors.append(restarted)
        eventually(
            lambda: bool(leaders(urls[first]).get("backup")),
            timeout=120,
            what="the restarted node answering",
            log=both_logs,
        )
        for _ in range(15):
            assert leader_urls(urls) == [urls[1 - first]], both_logs()
            time.sleep(1)
        assert "now leader of backup" not in restarted.log(), restarted.log()[-4000:]
        assert other.log().count("now leader of backup") == 1, other.log()[-4000:]

        all_copied(load, backup, remote, both_logs)
    finally:
        load.stop()
        for mirror in mirrors:
            if mirror.process.poll() is None:
                with contextlib.suppress(Exception):
                    mirror.signal_tree(signal.SIGCONT)
                mirror.stop()

    copied_once(primary, backup, topic)
