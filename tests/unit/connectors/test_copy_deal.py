"""The deal of source partitions to copy tasks, and how a running epoch grows without a restart
(mm2.connectors.deal, mm2.copy.assignment)."""

from __future__ import annotations

import pytest

from mm2.connectors.deal import deal, extend_deal, task_count
from mm2.copy.assignment import assignment_key, decode_additions, encode_additions
from mm2.copy.routes import Route
from mm2.copy.spec import Assignment, CopyTaskSpec
from mm2.errors import RecordFormatError
from mm2.records.connect_offsets import ConnectOffsetKey
from tests.support.specs import copy_spec


def _routes(**partitions: int) -> dict[str, Route]:
    return {t: Route(t, f"p.{t}", n) for t, n in partitions.items()}


def _names(dealt: list[list[tuple[str, int, str]]]) -> list[list[str]]:
    return [[f"{t}-{p}" for t, p, _ in task] for task in dealt]


def test_deal_is_apaches_round_robin_over_sorted_partitions() -> None:
    routes = _routes(t0=8, t1=2, t2=2)
    assert _names(deal(routes, 3)) == [
        ["t0-0", "t0-3", "t0-6", "t1-1"],
        ["t0-1", "t0-4", "t0-7", "t2-0"],
        ["t0-2", "t0-5", "t1-0", "t2-1"],
    ]
    assert len(deal(routes, 50)) == 12 == task_count(routes, 50)
    assert deal({}, 4) == [] and task_count({}, 4) == 0


def test_new_partitions_go_to_the_tasks_holding_fewest_and_nothing_dealt_moves() -> None:
    dealt = deal(_routes(a=3), 2)  # task 0: a-0, a-2; task 1: a-1
    added = extend_deal(dealt, _routes(a=3, b=3))
    assert added is not None
    assert {task: [f"{t}-{p}" for t, p, _ in placed] for task, placed in added.items()} == {
        1: ["b-0", "b-2"],  # task 1 held one partition: it gets the first, then ties go low
        0: ["b-1"],
    }
    assert all(target == f"p.{t}" for placed in added.values() for t, _, target in placed)


def test_nothing_new_is_an_empty_change() -> None:
    dealt = deal(_routes(a=4), 2)
    assert extend_deal(dealt, _routes(a=4)) == {}


def test_a_partition_no_longer_routed_or_renamed_needs_a_new_epoch() -> None:
    dealt = deal(_routes(a=2, b=2), 2)
    assert extend_deal(dealt, _routes(a=2)) is None  # topic b filtered out or deleted
    renamed = {"a": Route("a", "other.a", 2), "b": Route("b", "p.b", 2)}
    assert extend_deal(dealt, renamed) is None
    assert extend_deal([], _routes(a=1)) is None  # no copy task to give it to


def test_additions_round_trip_for_their_task_and_epoch_only() -> None:
    rows = {0: [Assignment("b", 1, "p.b", -1)], 2: [Assignment("c", 0, "p.c", 17)]}
    value = encode_additions("e1", rows)
    assert decode_additions(value, "e1", 0) == rows[0]
    assert decode_additions(value, "e1", 2) == rows[2]
    assert decode_additions(value, "e1", 1) == []
    assert decode_additions(value, "e0", 0) == []  # an earlier epoch's record
    assert decode_additions(b"not json", "e1", 0) == []
    assert decode_additions(b'{"epoch":"e1","tasks":{"0":[["x"]]}}', "e1", 0) == []
    assert decode_additions(None, "e1", 0) == []


def test_a_partition_copied_as_it_is_says_so_and_older_records_decode() -> None:
    beats = Assignment("heartbeats", 0, "primary.heartbeats", 3, "id-1", as_is=True)
    plain_beats = Assignment("heartbeats", 1, "primary.heartbeats", 3, "id-1", heartbeats=True)
    both = Assignment("heartbeats", 2, "primary.heartbeats", 3, "id-1", True, True)
    rows = {0: [beats, plain_beats, both, Assignment("b", 1, "p.b", -1, "id-2")]}
    value = encode_additions("e1", rows)
    assert decode_additions(value, "e1", 0) == rows[0]
    assert b'"id-2"]' in value  # five fields when it is not set, as an older mm2 wrote them
    older = b'{"epoch":"e1","tasks":{"0":[["b",1,"p.b",-1,"id-2"],["c",0,"p.c",4]]}}'
    assert decode_additions(older, "e1", 0) == [
        Assignment("b", 1, "p.b", -1, "id-2"),
        Assignment("c", 0, "p.c", 4, ""),
    ]


def test_the_assignment_key_is_connects_shape_but_no_mirror_maker_partition() -> None:
    """Connect (an Apache MM2 taking the flow over) reads it as an unknown connector's offsets;
    mm2's positions reader skips it (it is not a MirrorSourcePartition)."""
    key = assignment_key("a->b")
    assert key == b'["mm2-copy-assignment",{"flow":"a->b"}]'
    with pytest.raises(RecordFormatError):
        ConnectOffsetKey.from_bytes(key)


def test_a_spec_carries_where_its_epoch_publishes_additions() -> None:
    spec = copy_spec(
        flow="a->b",
        task=1,
        transactional=False,
        partitions=[Assignment("t", 0, "a.t", 5)],
        epoch="e1",
        offsets_admin={"bootstrap.servers": "b:9092"},
        offsets_consumer={"bootstrap.servers": "b:9092"},
    )
    again = CopyTaskSpec.from_json(spec.to_json())
    assert again == spec
    assert again.offsets_consumer == again.offsets_admin == {"bootstrap.servers": "b:9092"}
