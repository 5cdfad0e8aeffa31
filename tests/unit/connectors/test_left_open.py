"""LeftOpenWatch (mm2.connectors.left_open): a partition held back at one offset for longer
than the patience is said once; a moving hold, a freed partition or a failed look is not."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from mm2.connectors.left_open import LeftOpenWatch
from mm2.errors import KafkaClientError

TP = tuple[str, int]


class Probe:
    def __init__(self) -> None:
        self.held: dict[TP, int] = {}
        self.looks: list[list[str]] = []
        self.fail = False

    def __call__(self, topics: Sequence[str]) -> Mapping[TP, int]:
        self.looks.append(list(topics))
        if self.fail:
            raise KafkaClientError("listing offsets timed out", retriable=True)
        return dict(self.held)


def _watch() -> tuple[LeftOpenWatch, Probe, list[float]]:
    now = [0.0]
    probe = Probe()
    return LeftOpenWatch(probe, patience_s=90, every_s=30, clock=lambda: now[0]), probe, now


def test_a_partition_held_at_one_offset_past_the_patience_is_due_once() -> None:
    watch, probe, now = _watch()
    probe.held = {("r", 0): 10}
    found: dict[int, dict[TP, int]] = {}
    for t in range(0, 300, 10):
        now[0] = t
        due = watch.due(["r"])
        if due:
            assert not found, "said twice"
            found = {t: due}
    assert found == {120: {("r", 0): 10}}  # first seen at 30, due 90 s later
    assert len(probe.looks) == 9  # one look every 30 s, none between


def test_a_hold_that_moves_or_ends_is_a_running_transaction_and_never_due() -> None:
    watch, probe, now = _watch()
    for t in range(30, 600, 30):
        now[0] = t
        probe.held = {("r", 0): t} if t % 60 else {}  # a new transaction each time, or none
        assert watch.due(["r"]) == {}


def test_a_failed_look_is_no_hold_and_the_next_one_counts_from_its_first_sighting() -> None:
    watch, probe, now = _watch()
    probe.held = {("r", 1): 5}
    now[0] = 30
    assert watch.due(["r"]) == {}
    probe.fail = True
    now[0] = 60
    assert watch.due(["r"]) == {}
    probe.fail = False
    now[0] = 90  # seen again: counted from here, as the failed look forgot it
    assert watch.due(["r"]) == {}
    now[0] = 180
    assert watch.due(["r"]) == {("r", 1): 5}


def test_the_same_partition_held_again_at_another_offset_is_due_again() -> None:
    watch, probe, now = _watch()
    probe.held = {("r", 0): 10}
    now[0] = 30
    watch.due(["r"])
    now[0] = 120
    assert watch.due(["r"]) == {("r", 0): 10}
    probe.held = {("r", 0): 77}
    now[0] = 150
    assert watch.due(["r"]) == {}
    now[0] = 240
    assert watch.due(["r"]) == {("r", 0): 77}
