"""`make demo` reports success only when each topic got exactly this run's records."""

from __future__ import annotations

from mm2.cli.demo import _verdict


def test_success_only_when_every_topic_got_exactly_this_runs_records() -> None:
    assert _verdict({"a": 300, "b": 300}, 300) is None
    assert _verdict({"a": 300, "b": 299}, 300) == "not every record arrived (1 of b missing)"
    assert _verdict({"a": 0, "b": 600}, 300) == "not every record arrived (300 of a missing)"
    assert _verdict({"a": 302, "b": 300}, 300) == "records arrived more than once (2 of a)"
