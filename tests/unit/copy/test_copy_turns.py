"""Two producers of one copy task taking turns (mm2.copy.turns): a commit runs while the next
transaction copies, commits end in the order their records were written, and a commit that
fails takes the transaction behind it along."""

from __future__ import annotations

from typing import Any, cast

import pytest
from confluent_kafka import KafkaError, KafkaException

from mm2.copy.loop import CopyLoop
from mm2.copy.spec import Assignment
from mm2.copy.transaction import TransactionSink, producer_settings
from mm2.copy.turns import Turns, transactional_ids
from mm2.errors import ProducerFencedError
from mm2.kafka.failure import AuthAlarm
from mm2.offset_syncs.emitter import OffsetSyncEmitter
from tests.support.specs import copy_spec
from tests.unit.copy.test_copy_loop import (
    FakeConsumer,
    FakeMessage,
    FakeProducer,
    WatermarkConsumer,
)


class FailingCommit(FakeProducer):
    """Its next commit fails with `error` (once)."""

    def __init__(self, config: dict[str, Any]) -> None:
        super().__init__(config)
        self.error: KafkaError | None = None

    def commit_transaction(self) -> None:
        self.calls.append("commit")
        error, self.error = self.error, None
        if error is not None:
            raise KafkaException(error)


def _copier() -> tuple[CopyLoop, FailingCommit, FailingCommit]:
    spec = copy_spec(transactional=True, partitions=[Assignment("orders", 0, "primary.orders", 10)])
    first, second = transactional_ids(spec.transactional_id or "")
    a = FailingCommit(producer_settings(spec, first))
    b = FailingCommit(producer_settings(spec, second))
    copier = CopyLoop(
        spec,
        consumer=cast(Any, FakeConsumer({})),
        alarm=AuthAlarm("primary"),
        sink=TransactionSink(spec, cast(Any, a), AuthAlarm("backup"), first),
        alternate=TransactionSink(spec, cast(Any, b), AuthAlarm("backup"), second),
        syncs=OffsetSyncEmitter("", None, 100),
        feed=None,
    )
    return copier, a, b


def _copy(copier: CopyLoop, *offsets: int) -> None:
    copier._copy([cast(Any, FakeMessage("orders", 0, o, str(o).encode())) for o in offsets])


def test_the_second_id_is_the_first_with_a_suffix_and_both_are_fenced() -> None:
    assert transactional_ids("primary-mm2-MirrorSourceConnector-0") == [
        "primary-mm2-MirrorSourceConnector-0",
        "primary-mm2-MirrorSourceConnector-0-alt",
    ]


def test_the_next_transaction_copies_into_the_other_producer_while_one_commits() -> None:
    copier, a, b = _copier()
    _copy(copier, 10, 11)
    copier._end_transaction()
    _copy(copier, 12)
    assert b.calls[-2:] == ["begin", "produce primary.orders"]  # the next one, on b
    assert a.calls[-2:] == ["flush", "commit"] or a.calls[-1] == "flush"  # a's commit runs
    assert copier._settle()
    assert copier.positions() == {("orders", 0): 12}  # a's transaction, once it has ended
    copier._end_transaction()
    copier._settle()
    assert copier.positions() == {("orders", 0): 13}
    assert b.calls[-1] == "commit" and cast(Any, copier._sink._producer) is a  # a's turn again
    copier.close()


def test_a_failed_commit_aborts_the_transaction_behind_it_and_copies_again() -> None:
    copier, a, b = _copier()
    a.error = KafkaError(KafkaError._STATE, "abortable", txn_requires_abort=True)
    _copy(copier, 10, 11)
    copier._end_transaction()
    _copy(copier, 12)  # into b's transaction, behind a's in the target's log
    copier._end_transaction()  # waits for a's commit first: it failed
    assert a.calls[-2:] == ["commit", "abort"]
    assert b.calls[-1] == "abort" and "commit" not in b.calls  # never committed alone
    assert copier.positions() == {("orders", 0): 10}  # from the last commit again
    consumer = copier._consumer
    assert isinstance(consumer, FakeConsumer) and len(consumer.assigned) == 1
    copier.close()


def test_a_fenced_commit_ends_the_task() -> None:
    copier, a, _ = _copier()
    a.error = KafkaError(KafkaError._FENCED, "fenced", fatal=True)
    _copy(copier, 10)
    copier._end_transaction()
    with pytest.raises(ProducerFencedError, match="fenced by a newer holder"):
        copier._settle()
    copier.close()


def test_a_second_hand_over_waits_for_the_first_to_be_settled() -> None:
    copier, _, _ = _copier()
    turns: Turns[str] = Turns(copier._turns.sinks)
    turns.active.begin()
    turns.hand_over("first")
    with pytest.raises(RuntimeError, match="settle"):
        turns.hand_over("second")
    ended = turns.settle()
    assert ended is not None and ended[0] == "first" and ended[2] is None
    turns.close()


@pytest.mark.parametrize(
    ("end", "age_ms", "read", "due"),
    [
        (15, 5, False, False),  # too young, even idle
        (15, 20, True, True),  # caught up: ends without waiting for the boundary
        (15, 20, False, True),  # nothing more to read
        (100_000, 20, True, False),  # a backlog: the transaction runs on
        (100_000, 20, False, True),  # ... unless this round read nothing
        (100_000, 150, True, True),  # boundary_ms (100) always ends it
    ],
)
def test_a_transaction_ends_early_only_once_caught_up(
    end: int, age_ms: int, read: bool, due: bool
) -> None:
    copier, _, _ = _copier()
    copier._consumer = cast(Any, WatermarkConsumer(0, end))
    _copy(copier, 10, 11)
    txn = copier._txn
    assert txn is not None
    assert copier._due(txn, txn.opened + age_ms / 1000, read) is due
    copier.close()


def test_no_early_end_while_the_last_commit_is_in_flight() -> None:
    copier, _, _ = _copier()
    copier._consumer = cast(Any, WatermarkConsumer(0, 15))
    _copy(copier, 10)
    copier._end_transaction()  # its commit is handed over
    _copy(copier, 11)
    txn = copier._txn
    assert txn is not None
    assert copier._turns.in_flight()  # until the loop settles it
    assert not copier._due(txn, txn.opened + 0.02, True)  # caught up, but a commit runs
    assert copier._settle()
    assert copier._due(txn, txn.opened + 0.02, True)
    copier.close()
