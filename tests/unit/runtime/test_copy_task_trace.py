"""A waiting copy task's trace ends with what its planner retries: the flow's cause names it."""

from __future__ import annotations

from mm2.runtime.task_runner import _why


def test_the_planners_retried_error_comes_last_in_a_waiting_copy_tasks_trace() -> None:
    retrying = "polling again in 4 s after:\nKafkaClientError: a transaction that never ends"
    trace = _why("no copy epoch yet", retrying)
    assert trace is not None and trace.splitlines()[0] == "no copy epoch yet"
    assert trace.splitlines()[-1] == "KafkaClientError: a transaction that never ends"
    assert _why("no copy epoch yet", None) == "no copy epoch yet"
    assert _why(None, retrying) is None  # a copy task that copies waits for nothing
