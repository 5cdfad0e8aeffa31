"""Worker runtime lifecycle: task states, retries, pause/resume, stop and restart."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar

import pytest

from mm2.connect.spi import Connector, CopyTaskView, Task, TaskContext
from mm2.errors import ConflictError, KafkaClientError, NotFoundError
from mm2.runtime.changes import ChangeStore
from mm2.runtime.herder import ConnectorNotFoundError, Herder
from mm2.runtime.naming import find_connector
from mm2.runtime.task_runner import Backoff
from mm2.runtime.worker import Worker
from tests.support.waiting import eventually

FAST = Backoff(initial_s=0.01, maximum_s=0.05, restart_initial_s=0.01, restart_maximum_s=0.05)


class CountingTask(Task):
    polls: ClassVar[dict[str, int]] = {}
    lock = threading.Lock()

    def start(self, config: Mapping[str, str], context: TaskContext) -> None:
        self.key = f"{context.flow}|{context.connector}-{context.task_id}"
        self.mode = config.get("mode", "ok")
        self.failures_left = int(config.get("retriable.failures", "0"))
        if self.mode == "fail-start":
            raise RuntimeError("cannot start")

    def poll(self) -> float:
        if self.failures_left:
            self.failures_left -= 1
            raise KafkaClientError("broker away", retriable=True)
        if self.mode == "fatal":
            raise ValueError("bad record")
        with self.lock:
            self.polls[self.key] = self.polls.get(self.key, 0) + 1
        return 0.01

    def stop(self) -> None:
        pass


class CountingConnector(Connector):
    task_class = CountingTask

    def start(self, config: Mapping[str, str]) -> None:
        self.config = dict(config)

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.config) for _ in range(max_tasks)]


PLUGINS = {"CountingConnector": CountingConnector}


def polls(key: str) -> int:
    with CountingTask.lock:
        return CountingTask.polls.get(key, 0)


def herder(flow: str, **config: str) -> Herder:
    conf = {"connector.class": "CountingConnector", "tasks.max": "2", **config}
    return Herder(flow, {"C": conf}, PLUGINS, worker_id="w1", backoff=FAST)


def test_tasks_run_and_report_running() -> None:
    h = herder("a->b")
    h.start()
    try:
        eventually(
            lambda: polls("a->b|C-0") > 3 and polls("a->b|C-1") > 3,
            timeout=5,
            what="both tasks polling",
        )
        status = h.status("C")
        assert status.state == "RUNNING"
        assert [t.state for t in status.tasks] == ["RUNNING", "RUNNING"]
        assert all(t.worker_id == "w1" for t in status.tasks)
    finally:
        h.stop()


def test_retriable_errors_are_retried_then_task_runs() -> None:
    h = herder("r->b", **{"retriable.failures": "3"})
    h.start()
    try:
        eventually(lambda: polls("r->b|C-0") > 0, timeout=5, what="r->b|C-0 polling")
        assert h.status("C").tasks[0].state == "RUNNING"
    finally:
        h.stop()


def test_unexpected_error_restarts_task_with_trace() -> None:
    h = herder("f->b", mode="fatal")
    h.start()
    try:
        # Between a restart and its next failed poll the task is RUNNING with no trace, so
        # one snapshot, taken while it waits to restart, must carry both.
        task = eventually(
            lambda: (
                t
                if (t := h.status("C").tasks[0]).restarts >= 2 and t.state == "RESTARTING"
                else None
            ),
            timeout=10,
            what="RESTARTING after two restarts",
        )
        assert task.trace is not None and "ValueError: bad record" in task.trace
    finally:
        h.stop()


def test_start_failure_is_retried_not_fatal() -> None:
    h = herder("s->b", mode="fail-start")
    h.start()
    try:
        eventually(
            lambda: h.status("C").tasks[0].restarts >= 2,
            timeout=5,
            what="two restarts",
        )
        task = h.status("C").tasks[0]
        assert task.state == "RESTARTING" and "cannot start" in (task.trace or "")
    finally:
        h.stop()


def test_pause_stops_polling_and_resume_continues() -> None:
    h = herder("p->b")
    h.start()
    try:
        eventually(lambda: polls("p->b|C-0") > 0, timeout=5, what="p->b|C-0 polling")
        h.pause("C")
        eventually(
            lambda: all(t.state == "PAUSED" for t in h.status("C").tasks),
            timeout=5,
            what="every task PAUSED",
        )
        assert h.status("C").state == "PAUSED"
        before = polls("p->b|C-0")
        time.sleep(0.2)
        assert polls("p->b|C-0") == before
        h.resume("C")
        eventually(lambda: polls("p->b|C-0") > before, timeout=5, what="p->b|C-0 polling again")
        assert h.status("C").state == "RUNNING"
    finally:
        h.stop()


def test_stop_removes_tasks_and_resume_restarts_them() -> None:
    h = herder("x->b")
    h.start()
    try:
        h.stop_connector("C")
        status = h.status("C")
        assert status.state == "STOPPED" and status.tasks == ()
        h.resume("C")
        eventually(lambda: len(h.status("C").tasks) == 2, timeout=5, what="two tasks")
        assert h.status("C").state == "RUNNING"
    finally:
        h.stop()


def test_restart_only_failed_leaves_healthy_connector_alone() -> None:
    h = herder("o->b")
    h.start()
    try:
        eventually(lambda: polls("o->b|C-0") > 0, timeout=5, what="o->b|C-0 polling")
        runner_ids = [id(t) for t in h._connectors["C"].tasks]
        h.restart("C", include_tasks=True, only_failed=True)
        assert [id(t) for t in h._connectors["C"].tasks] == runner_ids
        h.restart("C", include_tasks=True)
        assert [id(t) for t in h._connectors["C"].tasks] != runner_ids
    finally:
        h.stop()


def test_unknown_connector_and_plugin_are_named() -> None:
    h = herder("u->b")
    with pytest.raises(ConnectorNotFoundError, match="'Nope' not found in u->b"):
        h.status("Nope")
    with pytest.raises(ConnectorNotFoundError, match="no connector plugin 'Missing'"):
        Herder("a->b", {"M": {"connector.class": "Missing"}}, PLUGINS, worker_id="w")


def test_worker_runs_one_herder_per_flow() -> None:
    conf = {"connector.class": "CountingConnector", "tasks.max": "1"}
    worker = Worker({"w1->w2": {"C": conf}, "w2->w1": {"C": conf}}, PLUGINS, backoff=FAST)
    worker.start()
    try:
        eventually(
            lambda: polls("w1->w2|C-0") > 0 and polls("w2->w1|C-0") > 0,
            timeout=5,
            what="both flows polling",
        )
        assert sorted(worker.herders) == ["w1->w2", "w2->w1"]
    finally:
        worker.stop()


def test_put_connector_creates_then_reconfigures_keeping_target_state() -> None:
    h = herder("c->b")
    h.start()
    try:
        conf = {"connector.class": "CountingConnector", "tasks.max": "1"}
        assert h.put_connector("D", conf) is True
        eventually(lambda: polls("c->b|D-0") > 0, timeout=5, what="c->b|D-0 polling")
        h.pause("D")
        assert h.put_connector("D", {**conf, "tasks.max": "2"}) is False
        assert h.target_state("D") == "PAUSED" and len(h.status("D").tasks) == 2
        h.delete_connector("D")
        assert "D" not in h.connector_names
    finally:
        h.stop()


def test_worker_adds_and_removes_flows_at_run_time() -> None:
    conf = {"connector.class": "CountingConnector", "tasks.max": "1"}
    worker = Worker({"a1->a2": {"C": conf}}, PLUGINS, backoff=FAST)
    worker.start()
    try:
        worker.add_flow("a2->a1", {"C": conf}, {"C": "STOPPED"})
        assert worker.herder("a2->a1").status("C").state == "STOPPED"
        with pytest.raises(ConflictError):
            worker.add_flow("a2->a1", {"C": conf})
        worker.remove_flow("a2->a1")
        with pytest.raises(NotFoundError):
            worker.herder("a2->a1")
    finally:
        worker.stop()


def test_connector_names_resolve_full_and_plain_and_refuse_ambiguity() -> None:
    pairs = [("a->b", "S"), ("b->a", "S"), ("a->b", "H")]
    assert find_connector("a.b.S", pairs) == ("a->b", "S")
    assert find_connector("H", pairs) == ("a->b", "H")
    assert find_connector("S", pairs, preferred=["b->a"]) == ("b->a", "S")
    with pytest.raises(ConflictError, match=r"a\.b\.S, b\.a\.S"):
        find_connector("S", pairs)
    with pytest.raises(NotFoundError):
        find_connector("x.y.S", pairs)
    with pytest.raises(ConflictError):
        find_connector("a.b.c.S", [("a.b->c", "S"), ("a->b.c", "S")])


def test_change_store_is_durable_and_private(tmp_path: Path) -> None:
    store = ChangeStore(tmp_path / "changes.json")
    store.update(lambda c: c.target_states.update({"a.b.S": "PAUSED"}))
    assert (tmp_path / "changes.json").stat().st_mode & 0o077 == 0
    assert ChangeStore(tmp_path / "changes.json").changes.target_states == {"a.b.S": "PAUSED"}


def test_connectors_start_with_the_worker_keys_which_stay_out_of_their_configs() -> None:
    conf = {"connector.class": "CountingConnector", "tasks.max": "1", "mode": "ok"}
    worker = {"offset.storage.replication.factor": "1", "mode": "from-worker"}
    h = Herder("w->b", {"C": conf}, PLUGINS, worker_id="w1", backoff=FAST, worker=worker)
    h.start()
    try:
        eventually(lambda: polls("w->b|C-0") > 0, timeout=30, what="w->b|C-0 polling")
        assert "offset.storage.replication.factor" not in h.config("C")
        started = h.started_config("C")
        assert started["offset.storage.replication.factor"] == "1"
        assert started["mode"] == "ok"  # the connector's own key wins
        # The tasks got it, but their configs are shown as Apache's would be.
        assert h.task_configs("C") == [conf]
    finally:
        h.stop()


class PlanningTask(CountingTask):
    """Runs three copy tasks elsewhere (as MirrorSourceTask does on Spark); counts its starts."""

    starts = 0

    def start(self, config: Mapping[str, str], context: TaskContext) -> None:
        PlanningTask.starts += 1
        super().start(config, context)

    def copy_tasks(self) -> list[CopyTaskView]:
        return [CopyTaskView(n, None, (f"orders-{n}",)) for n in range(3)]


class PlanningConnector(CountingConnector):
    task_class = PlanningTask


def test_copy_tasks_are_the_connectors_tasks_and_restart_with_their_planner() -> None:
    conf = {"connector.class": "PlanningConnector", "tasks.max": "1"}
    plugins = {**PLUGINS, "PlanningConnector": PlanningConnector}
    h = Herder("p->b", {"P": conf}, plugins, worker_id="w1", backoff=FAST)
    h.start()
    try:
        eventually(lambda: polls("p->b|P-0") > 3, timeout=5, what="the planner polling")
        status = h.status("P")
        assert [(t.id, t.state, t.partitions) for t in status.tasks] == [
            (n, "RUNNING", (f"orders-{n}",)) for n in range(3)
        ]
        # Copy task 2 is restarted with the planner that runs it (the one task there is).
        assert PlanningTask.starts == 1
        h.restart_task("P", 2)
        eventually(lambda: PlanningTask.starts == 2, timeout=5, what="the planner started again")
        assert len(h.status("P").tasks) == 3
        with pytest.raises(ConnectorNotFoundError, match="task 3"):
            h.restart_task("P", 3)
    finally:
        h.stop()


class SlowStopTask(CountingTask):
    """Takes `release` being set to stop, as a planner writing its last positions may."""

    release = threading.Event()

    def stop(self) -> None:
        SlowStopTask.release.wait(30)


class SlowStopConnector(CountingConnector):
    task_class = SlowStopTask


def test_offsets_wait_until_a_stopped_connectors_tasks_have_ended() -> None:
    conf = {"connector.class": "SlowStopConnector", "tasks.max": "1"}
    plugins = {**PLUGINS, "SlowStopConnector": SlowStopConnector}
    h = Herder("s->b", {"S": conf}, plugins, worker_id="w1", backoff=FAST)
    h.start()
    try:
        eventually(lambda: polls("s->b|S-0") > 3, timeout=5, what="the task polling")
        stopper = threading.Thread(target=h.stop_connector, args=("S",))
        stopper.start()
        eventually(lambda: h.status("S").state == "STOPPED", timeout=30, what="STOPPED")
        assert not h.wait_stopped("S", 0.2)  # STOPPED, but its task still writes
        SlowStopTask.release.set()
        assert h.wait_stopped("S", 30)
        stopper.join(30)
    finally:
        SlowStopTask.release.set()
        h.stop()
