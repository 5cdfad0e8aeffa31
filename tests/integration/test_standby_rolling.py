"""Two nodes under load: a rolling restart of both moves the lead once, and offsets
changed over REST on the standby are carried out by the leader and stick.

A rolling restart restarts the standby first, then the leader: the standby's restart must cost
no handover (the leader keeps the lead while it stops, starts and joins again), the leader's
exactly one (to the standby, which keeps it when the old leader comes back). The test measures
how long the remote topic stopped growing during each step and checks every record arrived
once, in order, for a read_committed reader.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import Consumer, TopicPartition

from tests.support.kafka import count, create_topic, produce_numbered, read_topic
from tests.support.mirror import MirrorProcess
from tests.support.standby import (
    all_copied,
    copied_once,
    leader_urls,
    leaders,
    logs_of,
    steady_load,
    two_nodes,
)
from tests.support.waiting import eventually

pytestmark = [pytest.mark.integration, pytest.mark.slow]
log = logging.getLogger(__name__)

PARTITIONS = 3
SOURCE = "primary.backup.MirrorSourceConnector"


class Growth:
    """Samples the remote topic's end offsets twice a second; the longest stretch in a window
    during which they did not move is how long copying stopped."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self._consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "mm2-test-growth"})
        self._topic = topic
        self.samples: list[tuple[float, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            try:
                total = sum(
                    self._consumer.get_watermark_offsets(TopicPartition(self._topic, p), 5)[1]
                    for p in range(PARTITIONS)
                )
            except Exception:  # a broker hiccup: no sample
                continue
            self.samples.append((time.monotonic(), total))

    def start(self) -> Growth:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self._consumer.close()

    def longest_stall(self, since: float, until: float) -> float:
        window = [(t, n) for t, n in self.samples if since <= t <= until]
        longest, moved_at, last = 0.0, since, -1
        for t, n in window:
            if n != last:
                longest, moved_at, last = max(longest, t - moved_at), t, n
        return max(longest, (window[-1][0] - moved_at) if window else 0.0)


def test_a_rolling_restart_of_both_nodes_under_load_moves_the_lead_once(
    primary: Any, backup: Any, new_topic: Any, tmp_path: Path
) -> None:
    topic = new_topic(primary, PARTITIONS, prefix="rolling")
    remote = f"primary.{topic}"
    mirrors, urls = two_nodes(tmp_path, primary, backup, topic)
    load = steady_load(primary, topic, PARTITIONS)
    growth = Growth(backup.bootstrap_servers, remote)

    all_logs = logs_of(mirrors)

    def hold(leader: str, seconds: int) -> None:
        for _ in range(seconds):
            assert leader_urls(urls) == [leader], all_logs()
            time.sleep(1)

    try:
        eventually(
            lambda: len(leader_urls(urls)) == 1, timeout=180, what="one leader", log=all_logs
        )
        lead_i = urls.index(leader_urls(urls)[0])
        load.start()
        eventually(
            lambda: count(backup.bootstrap_servers, remote) > 300,
            timeout=180,
            what="records copied",
            log=all_logs,
        )
        growth.start()
        time.sleep(3)

        # Step 1: the standby restarts. The leader keeps the lead throughout.
        began = time.monotonic()
        standby = mirrors[1 - lead_i]
        assert standby.stop() == 0, standby.log()[-3000:]
        again = MirrorProcess(standby.log_path.parent / "mm2.properties")
        mirrors.append(again)
        eventually(
            lambda: bool(leaders(urls[1 - lead_i]).get("backup")),
            timeout=120,
            what="the restarted standby answering",
            log=all_logs,
        )
        hold(urls[lead_i], 10)
        first_step = (began, time.monotonic())
        assert "now leader of backup" not in again.log(), again.log()[-3000:]

        # Step 2: the leader restarts: its flows move to the standby once, and stay there when
        # the old leader comes back.
        began = time.monotonic()
        leader = mirrors[lead_i]
        assert leader.stop() == 0, leader.log()[-3000:]
        eventually(
            lambda: leader_urls([urls[1 - lead_i]]) == [urls[1 - lead_i]],
            timeout=120,
            what="the standby leading",
            log=all_logs,
        )
        back = MirrorProcess(leader.log_path.parent / "mm2.properties")
        mirrors.append(back)
        eventually(
            lambda: bool(leaders(urls[lead_i]).get("backup")),
            timeout=120,
            what="the old leader answering again",
            log=all_logs,
        )
        hold(urls[1 - lead_i], 10)
        second_step = (began, time.monotonic())
        assert "now leader of backup" not in back.log(), back.log()[-3000:]
        assert again.log().count("now leader of backup") == 1, again.log()[-3000:]

        all_copied(load, backup, remote, all_logs)
    finally:
        load.stop()
        growth.stop()
        for mirror in mirrors:
            if mirror.process.poll() is None:
                mirror.stop()

    log.info(
        "rolling restart: copying stopped at most %.1f s while the standby restarted, %.1f s "
        "while the leader restarted",
        growth.longest_stall(*first_step),
        growth.longest_stall(*second_step),
    )
    copied_once(primary, backup, topic)


def test_offsets_changed_on_the_standby_are_carried_out_by_the_leader_and_stick(
    primary: Any, backup: Any, tmp_path: Path
) -> None:
    """PATCH .../offsets sent to the standby goes to the leader that runs the flow, which
    changes the position once its copy tasks have ended; resumed, the flow copies from there."""
    topic = f"patched-{uuid.uuid4().hex[:8]}"
    remote = f"primary.{topic}"
    create_topic(primary, topic, partitions=1)
    produce_numbered(primary.bootstrap_servers, topic, b"a", 1000)
    mirrors, urls = two_nodes(tmp_path, primary, backup, topic)

    all_logs = logs_of(mirrors)

    stack = contextlib.ExitStack()
    try:
        eventually(
            lambda: len(leader_urls(urls)) == 1, timeout=180, what="one leader", log=all_logs
        )
        lead_i = urls.index(leader_urls(urls)[0])
        eventually(
            lambda: bool(leaders(urls[1 - lead_i]).get("backup")),
            timeout=60,
            what="the standby knowing the leader",
            log=all_logs,
        )
        eventually(
            lambda: count(backup.bootstrap_servers, remote) >= 1000,
            timeout=180,
            what="the first 1,000 records",
            log=all_logs,
        )
        api = stack.enter_context(httpx.Client(base_url=urls[1 - lead_i], timeout=60))
        assert api.put(f"/connectors/{SOURCE}/stop").status_code == 204

        def stopped() -> bool:
            answer = api.patch(f"/connectors/{SOURCE}/offsets", json=patch)
            assert answer.status_code in (200, 409), answer.text  # 409: its tasks still stop
            return answer.status_code == 200

        produce_numbered(primary.bootstrap_servers, topic, b"b", 1000)  # offsets 1000-1999
        # The operator skips the first 500 of them on purpose: the position says 1499.
        where = {"cluster": "primary", "topic": topic, "partition": 0}
        patch = {"offsets": [{"partition": where, "offset": {"offset": 1499}}]}
        eventually(stopped, timeout=60, what="the change carried out by the leader", log=all_logs)

        def offset() -> int | None:
            for entry in api.get(f"/connectors/{SOURCE}/offsets").json()["offsets"]:
                if entry["partition"] == where:
                    return int(entry["offset"]["offset"])
            return None

        assert offset() == 1499
        assert api.put(f"/connectors/{SOURCE}/resume").status_code == 202
        eventually(
            lambda: count(backup.bootstrap_servers, remote) >= 1500,
            timeout=180,
            what="the 500 records after the changed position",
            log=all_logs,
        )
        eventually(lambda: offset() == 1999, timeout=60, what="the position at 1999", log=all_logs)
        time.sleep(3)  # time enough for a late write to undo the change, if one would
    finally:
        stack.close()
        for mirror in mirrors:
            if mirror.process.poll() is None:
                mirror.stop()

    values = [
        r[2]
        for r in read_topic(
            backup.bootstrap_servers, remote, **{"isolation.level": "read_committed"}
        )[0]
    ]
    assert values == [b"a-%d" % i for i in range(1000)] + [b"b-%d" % i for i in range(500, 1000)]
