"""held_back: the partitions a transaction holds back, from the two offsets the broker gives
(the last stable offset and the end), as end_left_open sees them before and after it acts."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, cast

from mm2.copy.fencing import held_back
from mm2.kafka.offsets import OffsetLister

TP = tuple[str, int]


class Offsets:
    def __init__(self, stable: dict[TP, int], ends: dict[TP, int]) -> None:
        self.stable, self.ends = stable, ends

    def offsets(
        self, partitions: Iterable[TP], *, latest: bool, read_committed: bool
    ) -> dict[TP, int]:
        assert latest
        answer = self.stable if read_committed else self.ends
        return {tp: answer[tp] for tp in partitions if tp in answer}


def lister(stable: dict[TP, int], ends: dict[TP, int]) -> OffsetLister:
    return cast("OffsetLister", cast("Any", Offsets(stable, ends)))


def test_a_partition_is_held_back_where_its_last_stable_offset_is_behind_its_end() -> None:
    stable = {("o", 0): 142, ("o", 1): 7, ("r", 0): 0}
    ends = {("o", 0): 143, ("o", 1): 7, ("r", 0): 5}
    assert held_back(lister(stable, ends), sorted(ends)) == {("o", 0): 142, ("r", 0): 0}


def test_a_partition_the_broker_gives_no_offset_for_is_not_held() -> None:
    assert held_back(lister({}, {("o", 0): 3}), [("o", 0)]) == {}
    assert held_back(lister({("o", 0): 1}, {}), [("o", 0)]) == {}
