"""TaskRunner heals its task: retries, restarts with capped backoff, FAILED only for operators."""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Mapping
from typing import ClassVar

import pytest

from mm2.connect.spi import CopyTaskView, Task, TaskContext
from mm2.errors import AuthenticationError, ConfigError, KafkaClientError, RecordTooLargeError
from mm2.runtime.task_runner import Backoff, TaskRunner
from tests.support.waiting import eventually

TINY = Backoff(initial_s=0.01, maximum_s=0.04, restart_initial_s=0.01, restart_maximum_s=0.04)


class ScriptedTask(Task):
    """Fails as its config says; counts starts, stops and polls per `key` across instances."""

    lock = threading.Lock()
    counts: ClassVar[dict[str, int]] = {}

    @classmethod
    def bump(cls, name: str) -> int:
        with cls.lock:
            cls.counts[name] = cls.counts.get(name, 0) + 1
            return cls.counts[name]

    @classmethod
    def count(cls, name: str) -> int:
        with cls.lock:
            return cls.counts.get(name, 0)

    def start(self, config: Mapping[str, str], context: TaskContext) -> None:
        self.key = config["key"]
        self.config = config
        starts = self.bump(f"{self.key}:start")
        if starts <= int(config.get("start.failures", "0")):
            raise KafkaClientError("listing topics on backup (b:9092): transport", retriable=True)

    def poll(self) -> float:
        polls = self.bump(f"{self.key}:poll")
        mode = self.config.get("poll", "ok")
        if mode == "crash" and polls <= int(self.config.get("crashes", "1000000")):
            raise ValueError("bad record")
        if mode == "auth":
            raise AuthenticationError("authentication failed for backup (b:9092): wrong password")
        if mode == "config":
            raise ConfigError("no such thing", key="x")
        if mode == "too-large":
            raise RecordTooLargeError("t-0 offset 5 is larger than the target accepts")
        if mode == "not-retriable":
            raise KafkaClientError("INVALID_REPLICATION_FACTOR", retriable=False)
        return 0.01

    def stop(self) -> None:
        self.bump(f"{self.key}:stop")


def runner(key: str, backoff: Backoff = TINY, /, **config: str) -> TaskRunner:
    # Positional-only: a config key (e.g. **{"start.failures": "3"}) can never be `backoff`.
    return TaskRunner(
        ScriptedTask(),
        {"key": key, **config},
        flow="a->b",
        connector="C",
        task_id=0,
        worker_id="w",
        backoff=backoff,
    )


def test_start_that_fails_retriably_is_stopped_and_started_again() -> None:
    r = runner("start-retry", **{"start.failures": "3"})
    r.start()
    try:
        eventually(
            lambda: ScriptedTask.count("start-retry:poll") > 0,
            timeout=10,
            what="a poll after the start retries",
        )
        assert r.status().state == "RUNNING"
        assert r.restarts == 3 and r.status().restarts == 3
        assert ScriptedTask.count("start-retry:stop") == 3  # each failed start was stopped
        assert r.status().trace is None
    finally:
        r.stop()


@pytest.mark.parametrize("mode", ["crash", "not-retriable"])
def test_unexpected_failure_restarts_the_task_and_traces_the_wait(mode: str) -> None:
    slow = Backoff(initial_s=0.01, maximum_s=0.04, restart_initial_s=0.01, restart_maximum_s=30)
    r = runner(f"restart-{mode}", slow, poll=mode)
    r.start()
    try:
        # 0.01 s doubling: the 9th wait is over 2 s long, so the state is seen while waiting.
        # One snapshot: just after a restart the task is RUNNING with no trace.
        status = eventually(
            lambda: s if (s := r.status()).restarts >= 8 and s.state == "RESTARTING" else None,
            timeout=30,
            what="eight restarts, RESTARTING",
        )
        assert status.trace is not None
        assert re.match(r"restarting in [0-9.]+ s \(at \d{4}-\d\d-\d\dT", status.trace)
        assert ("ValueError: bad record" if mode == "crash" else "INVALID_REPLICATION") in (
            status.trace
        )
    finally:
        r.stop()
    assert not r._thread.is_alive()  # stopped while it waited for the restart


def test_every_status_of_a_failing_task_that_is_not_running_says_why() -> None:
    """State and trace change together: sampled as fast as it goes while the task fails and
    restarts every few ms, no status is RESTARTING or FAILED without its trace."""
    fast = Backoff(
        initial_s=0.001, maximum_s=0.001, restart_initial_s=0.001, restart_maximum_s=0.001
    )
    r = runner("snapshots", fast, poll="crash")
    r.start()
    seen: dict[str, int] = {}
    try:
        deadline = time.monotonic() + 60
        while r.restarts < 100 and time.monotonic() < deadline:
            status = r.status()
            if status.state in ("RESTARTING", "FAILED"):
                assert status.trace, status
            seen[status.state] = seen.get(status.state, 0) + 1
    finally:
        r.stop()
    assert r.restarts >= 100 and seen.get("RESTARTING"), seen


def test_task_that_recovers_runs_again_with_a_clean_trace() -> None:
    r = runner("recover", poll="crash", crashes="2")
    r.start()
    try:
        eventually(
            lambda: ScriptedTask.count("recover:poll") > 5,
            timeout=10,
            what="polls after recovering",
        )
        assert r.status().state == "RUNNING"
        assert r.restarts == 2
        assert r.status().trace is None
    finally:
        r.stop()


def test_restart_delays_double_up_to_the_cap(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="mm2.runtime.task_runner")
    r = runner("delays", poll="crash")
    r.start()
    try:
        eventually(lambda: r.restarts >= 5, timeout=10, what="five restarts")
    finally:
        r.stop()
    delays = re.findall(r"restarting it in ([0-9.]+) s", caplog.text)
    assert delays[:5] == ["0.01", "0.02", "0.04", "0.04", "0.04"]


@pytest.mark.parametrize(
    ("mode", "text"),
    [
        ("auth", "AuthenticationError: authentication failed for backup (b:9092)"),
        ("config", "ConfigError: x: no such thing"),
        ("too-large", "RecordTooLargeError: t-0 offset 5"),
    ],
)
def test_operator_errors_fail_the_task_for_good(mode: str, text: str) -> None:
    r = runner(f"operator-{mode}", poll=mode)
    r.start()
    try:
        eventually(lambda: r.status().state == "FAILED", timeout=10, what="the task FAILED")
        time.sleep(0.1)  # several restart delays: none may happen
        status = r.status()
        assert status.state == "FAILED" and r.restarts == 0
        assert text in (status.trace or "")
        assert ScriptedTask.count(f"operator-{mode}:stop") == 1
    finally:
        r.stop()


def test_retriable_poll_errors_keep_the_task_running_and_show_the_retry() -> None:
    class Flaky(ScriptedTask):
        def poll(self) -> float:
            if self.bump("flaky:poll") < 1_000_000:
                raise KafkaClientError(
                    "listing offsets on primary: FENCED_LEADER_EPOCH", retriable=True
                )
            return 0.01

    slow = Backoff(initial_s=0.01, maximum_s=30.0)
    r = TaskRunner(
        Flaky(),
        {"key": "flaky"},
        flow="a->b",
        connector="C",
        task_id=0,
        worker_id="w",
        backoff=slow,
    )
    r.start()
    try:
        eventually(
            lambda: ScriptedTask.count("flaky:poll") > 3,
            timeout=10,
            what="polls despite the flaky errors",
        )
        status = r.status()
        assert status.state == "RUNNING" and r.restarts == 0
        assert "polling again in" in (status.trace or "")
        assert "FENCED_LEADER_EPOCH" in (status.trace or "")
    finally:
        r.stop()


class PlannerTask(Task):
    """Runs two copy tasks elsewhere; `waiting` says why they do not copy (None: they do)."""

    waiting: str | None = None

    def start(self, config: Mapping[str, str], context: TaskContext) -> None: ...

    def poll(self) -> float:
        return 0.01

    def stop(self) -> None: ...

    def copy_tasks(self) -> list[CopyTaskView]:
        return [
            CopyTaskView(0, self.waiting, ("orders-0", "orders-2")),
            CopyTaskView(1, self.waiting, ("orders-1",)),
        ]


def test_the_connect_view_shows_each_copy_task_with_its_partitions() -> None:
    task = PlannerTask()
    planner = TaskRunner(task, {}, flow="a->b", connector="C", task_id=0, worker_id="w:8083")
    # Not started: the copy tasks show their planner's state.
    assert [s.state for s in planner.statuses()] == ["UNASSIGNED", "UNASSIGNED"]
    planner.start()
    try:
        eventually(lambda: planner.status().state == "RUNNING", timeout=30, what="RUNNING")
        shown = planner.statuses()
        assert [(s.id, s.state, s.worker_id, s.partitions) for s in shown] == [
            (0, "RUNNING", "w:8083", ("orders-0", "orders-2")),
            (1, "RUNNING", "w:8083", ("orders-1",)),
        ]
        task.waiting = "between two copy epochs"  # not copying, and said so
        between = planner.statuses()
        assert {s.state for s in between} == {"UNASSIGNED"}
        assert all(s.trace == "between two copy epochs" for s in between), between
    finally:
        planner.stop()


def test_a_task_that_runs_no_copy_tasks_shows_itself() -> None:
    (own,) = runner("plain").statuses()
    assert (own.id, own.partitions) == (0, None)


class NotingTask(Task):
    """Runs and says something about how (MirrorSchemaTask says whether IDs are kept)."""

    def start(self, config: Mapping[str, str], context: TaskContext) -> None:
        self.failing = config.get("poll") == "fail"

    def poll(self) -> float:
        if self.failing:
            raise KafkaClientError("target down", retriable=True)
        return 0.01

    def status_note(self) -> str | None:
        return "schema IDs translated in flight: the target assigns its own IDs"

    def stop(self) -> None:
        pass


@pytest.mark.parametrize(
    ("poll", "expected"),
    [("ok", "schema IDs translated in flight"), ("fail", "polling again in")],
)
def test_a_running_task_s_note_is_its_trace_and_an_error_wins(poll: str, expected: str) -> None:
    runner = TaskRunner(
        NotingTask(),
        {"poll": poll},
        flow="a->b",
        connector="MirrorSchemaConnector",
        task_id=0,
        worker_id="w",
        backoff=TINY,
    )
    runner.start()
    try:
        eventually(
            lambda: (
                runner.status().state == "RUNNING"
                and (runner.status().trace or "").startswith(expected)
            ),
            timeout=5,
            what=f"a running task whose trace starts with {expected!r}",
        )
    finally:
        runner.stop()
