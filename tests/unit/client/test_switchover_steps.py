"""The switchover's drain and flow-state steps, against in-memory lag reads and flows."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mm2.client.lag import LagReport, PartitionLag
from mm2.client.switchover import _drain, _Run, _set_state
from mm2.client.switchover_report import SwitchoverError, SwitchoverReport


def report(*rows: tuple[int, int]) -> LagReport:
    """One partition per (end, position) row."""
    parts = tuple(
        PartitionLag("t", i, end, pos, end - pos, 1.0 if end > pos else 0.0)
        for i, (end, pos) in enumerate(rows)
    )
    return LagReport("a->b", 0, parts)


def reads(*reports: LagReport) -> Iterator[LagReport]:
    yield from reports
    while True:
        yield reports[-1]


def test_the_drain_ends_after_two_reads_with_lag_0_and_the_same_ends() -> None:
    said: list[str] = []
    run = _Run(SwitchoverReport("a->b", False), said.append)
    sequence = reads(
        report((10, 5), (4, 4)),
        report((12, 12), (4, 4)),
        report((14, 14), (4, 4)),
        report((14, 14), (4, 4)),
    )
    drained = _drain(run, lambda: next(sequence), drain_timeout=60, poll_seconds=0.0)
    parts = [(p.log_end, p.position, p.records) for p in drained.partitions]
    assert parts == [(14, 14, 0), (4, 4, 0)]
    assert any("t-0: end 10, copied to 5, 5 behind" in line for line in said), said
    assert any("the source still receives records: t-0 (+2)" in line for line in said), said


def test_a_source_that_keeps_receiving_is_not_drained_and_nothing_changes() -> None:
    run = _Run(SwitchoverReport("a->b", False), lambda line: None)
    ends = iter(range(10, 10**6))

    def moving() -> LagReport:
        end = next(ends)
        return report((end, end))

    with pytest.raises(SwitchoverError, match="not drained within 0 s") as caught:
        _drain(run, moving, drain_timeout=0.0, poll_seconds=0.0)
    assert caught.value.report.partitions  # what it saw last


class Flows:
    def __init__(self, **states: str) -> None:
        self.states = states
        self.calls: list[str] = []

    def state(self, source: str, target: str) -> str | None:
        return self.states.get(f"{source}_{target}")

    def pause(self, source: str, target: str) -> None:
        self.calls.append(f"pause {source}->{target}")
        self.states[f"{source}_{target}"] = "PAUSED"

    def resume(self, source: str, target: str) -> None:
        self.calls.append(f"resume {source}->{target}")
        self.states[f"{source}_{target}"] = "RUNNING"


@pytest.mark.parametrize(
    ("before", "wanted", "calls"),
    [
        ("RUNNING", "PAUSED", ["pause a->b"]),
        ("PAUSED", "PAUSED", []),
        ("PAUSED", "RUNNING", ["resume a->b"]),
        ("DEGRADED", "RUNNING", []),  # running, only not well: resuming changes nothing
    ],
)
def test_a_flow_is_changed_only_when_it_is_not_as_wanted(
    before: str, wanted: str, calls: list[str]
) -> None:
    said: list[str] = []
    run = _Run(SwitchoverReport("a->b", False), said.append)
    flows = Flows(a_b=before)
    change = flows.pause if wanted == "PAUSED" else flows.resume
    _set_state(run, flows, "a", "b", wanted, change)
    assert flows.calls == calls
    assert ("already" in said[-1]) == (not calls), said


def test_a_resumed_flow_is_waited_for_until_it_runs() -> None:
    said: list[str] = []
    run = _Run(SwitchoverReport("a->b", False), said.append)
    answers = iter(["PAUSED", "DEGRADED", "DEGRADED", "RUNNING"])

    class Starting(Flows):
        def state(self, source: str, target: str) -> str | None:
            return next(answers)

    flows = Starting()
    _set_state(run, flows, "a", "b", "RUNNING", flows.resume, settle_s=60)
    assert flows.calls == ["resume a->b"]
    assert said[-1] == "a->b: PAUSED -> RUNNING"


def test_a_resumed_flow_that_stays_degraded_is_said_as_it_is() -> None:
    said: list[str] = []
    run = _Run(SwitchoverReport("a->b", False), said.append)
    flows = Flows(a_b="PAUSED")
    flows.resume = lambda source, target: flows.states.update(a_b="DEGRADED")  # type: ignore[method-assign]
    _set_state(run, flows, "a", "b", "RUNNING", flows.resume, settle_s=0.0)
    assert said[-1] == "a->b: PAUSED -> DEGRADED"
