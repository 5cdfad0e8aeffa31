"""The planner's first steps (mm2.connectors.source): the earlier copy tasks are fenced and the
positions read before it waits for Spark, and the first epoch starts on that settle."""

from __future__ import annotations

import threading
from concurrent.futures import Future
from typing import Any

import pytest

import mm2.connectors.source as source
from mm2.connectors.source import MirrorSourceTask
from mm2.errors import KafkaClientError


class FakeLocation:
    connector = "MirrorSourceConnector"

    def __init__(self, calls: list[str]) -> None:
        self._calls = calls

    def ensure_topic(self) -> None:
        self._calls.append("offsets topic")

    def source_cluster_id(self) -> str:
        return "c1"

    def tail(self) -> object:
        return object()


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    monkeypatch.setattr(source, "offset_syncs_target", lambda flow: ("", None))
    monkeypatch.setattr(source, "spark_conf", lambda config: {})

    def spark(conf: object) -> str:
        seen.append("spark")
        return "sc"

    monkeypatch.setattr(source, "spark_context", spark)
    monkeypatch.setattr(source, "CopyJob", lambda sc, name: f"job on {sc}")
    return seen


def _task(calls: list[str], *, fail_spark: bool = False) -> MirrorSourceTask:
    task = MirrorSourceTask.__new__(MirrorSourceTask)
    t: Any = task
    t._job = None
    t._tail = None
    t._settled = False
    t._config = {}
    t._flow = type("F", (), {"name": "primary->backup"})()
    t._location = FakeLocation(calls)
    t._eos = True
    t._fencing = None
    fencing = threading.Event()

    def fence(timeout: float) -> None:
        fencing.set()

    def routes() -> None:  # the fencing runs beside the topic sync, not after it
        calls.append("routes while fencing" if fencing.wait(10) else "routes")

    t._fence = fence
    t._refresh_routes = routes
    t._settle = lambda timeout: calls.append("settle")
    return task


def test_the_first_settle_comes_before_waiting_for_spark(calls: list[str]) -> None:
    task = _task(calls)
    job: object = task._prepare()
    assert job == "job on sc"
    assert calls == ["offsets topic", "routes while fencing", "settle", "spark"]
    assert task._settled is True  # the first epoch starts on it without fencing again


def test_a_retried_prepare_does_not_settle_twice(
    calls: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    task = _task(calls)

    def spark_away(conf: object) -> str:
        calls.append("spark")
        raise RuntimeError("JVM not up")

    monkeypatch.setattr(source, "spark_context", spark_away)
    with pytest.raises(RuntimeError):
        task._prepare()

    def spark_back(conf: object) -> str:
        calls.append("spark")
        return "sc"

    monkeypatch.setattr(source, "spark_context", spark_back)
    task._prepare()
    assert calls.count("settle") == 1
    assert calls[-1] == "spark"


class FakeTail:
    def read_to_end(self, timeout: float) -> list[object]:
        return []


def _settling(fencing: Future[None] | None, fenced: list[float]) -> MirrorSourceTask:
    task = MirrorSourceTask.__new__(MirrorSourceTask)
    t: Any = task
    t._eos = True
    t._fencing = fencing
    t._fence = fenced.append
    t._fence_count = 2
    t._flow = type("F", (), {"name": "primary->backup", "tasks_max": 2})()
    t._tail = FakeTail()
    t._apply = lambda records: None
    t._positions = type("P", (), {"offsets": {}})()
    return task


def test_the_settle_waits_for_the_early_fencing_instead_of_fencing_again() -> None:
    done: Future[None] = Future()
    done.set_result(None)
    fenced: list[float] = []
    task = _settling(done, fenced)
    task._settle(timeout=30.0)
    assert fenced == [] and task._fencing is None
    task._settle(timeout=30.0)  # the next settle (a later epoch) fences by itself
    assert fenced == [30.0]


def test_a_failed_early_fencing_fails_the_settle_and_is_started_again_next_time() -> None:
    failed: Future[None] = Future()
    failed.set_exception(KafkaClientError("fencing earlier copy tasks failed", retriable=True))
    fenced: list[float] = []
    task = _settling(failed, fenced)
    with pytest.raises(KafkaClientError, match="fencing earlier copy tasks"):
        task._settle(timeout=30.0)
    assert task._fencing is None  # so the retried _prepare starts a fresh one
