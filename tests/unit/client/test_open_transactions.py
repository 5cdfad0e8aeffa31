"""A partition held back by a transaction nobody ends is found after HANGING_S, not before, and
forgotten once its last stable offset moves."""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

import pytest

from mm2.client import open_transactions
from mm2.client.open_transactions import HANGING_S, OpenTransaction, OpenTransactions

TP = tuple[str, int]


class Lister:
    stable: ClassVar[dict[TP, int]] = {}
    ends: ClassVar[dict[TP, int]] = {}

    def __init__(self, *_: object, **__: object) -> None: ...

    def offsets(self, tps: Iterable[TP], *, latest: bool, read_committed: bool) -> dict[TP, int]:
        source = Lister.stable if read_committed else Lister.ends
        return {tp: source[tp] for tp in tps if tp in source}


def test_held_back_for_a_minute_is_found_and_forgotten_when_it_moves(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(open_transactions, "OffsetLister", Lister)
    check = OpenTransactions({"bootstrap.servers": "b:9092"})
    held, busy = ("primary.orders", 3), ("primary.orders", 0)
    # Partition 3: held at 40 with 45 written; partition 0: a copy task's transactions end.
    Lister.stable, Lister.ends = {held: 40, busy: 100}, {held: 45, busy: 103}
    assert check.check([held, busy], now=0.0) == []
    Lister.stable[busy], Lister.ends[busy] = 110, 112
    assert check.check([held, busy], now=HANGING_S - 1) == []
    Lister.stable[busy], Lister.ends[busy] = 120, 121
    found = check.check([held, busy], now=HANGING_S + 5)
    assert found == [OpenTransaction("primary.orders", 3, 40, 45, HANGING_S + 5)]
    Lister.stable[held] = 45  # aborted: the last stable offset reaches the end
    assert check.check([held, busy], now=HANGING_S + 20) == []
