"""The failover plan without a broker: which partitions move where, and what gets committed."""

from __future__ import annotations

import json

from mm2.cli.offset_tools import render_plan
from mm2.client.plan import FailoverPlan, PartitionMove, commits_for, plan_partitions
from mm2.offset_syncs.exact_index import RUN, PrevSync
from mm2.offset_syncs.reverse import ReverseTranslator
from mm2.offset_syncs.translator import OffsetTranslator
from mm2.policies.replication import DefaultReplicationPolicy
from mm2.records import OffsetAndMetadata, OffsetSync, TopicPartition

POLICY = DefaultReplicationPolicy()
TP = TopicPartition


def forward() -> OffsetTranslator:
    t = OffsetTranslator(initialization_must_read_to_end=False)
    t.handle(OffsetSync("orders", 0, 0, 0), None)
    t.handle(OffsetSync("orders", 0, 99, 99), PrevSync(0, 0, RUN))
    t.handle(OffsetSync("orders", 0, 200, 150), None)  # no proof: Apache's rule from here
    t.mark_read_to_end()
    return t


def backward() -> ReverseTranslator:
    r = ReverseTranslator()
    r.handle(OffsetSync("payments", 0, 10, 5), None)
    r.handle(OffsetSync("payments", 0, 59, 54), PrevSync(10, 5, RUN))
    return r


def plan(commits: dict[TopicPartition, int], **kw: object) -> list[PartitionMove]:
    args: dict[str, object] = {
        "policy": POLICY,
        "source": "primary",
        "target": "backup",
        "mirrored": lambda t: not t.startswith("private"),
        "forward": forward(),
        "backward": backward(),
        "current": {},
    }
    args.update(kw)
    return plan_partitions(
        {tp: OffsetAndMetadata(o, "m") for tp, o in commits.items()},
        **args,  # type: ignore[arg-type]
    )


def test_forward_partitions_are_exact_inside_proven_runs() -> None:
    (move,) = plan({TP("orders", 0): 42})
    assert move.target == TP("primary.orders", 0)
    assert (move.target_offset, move.exact, move.rereads_at_most) == (42, True, 0)
    assert move.metadata == "m"


def test_beyond_the_proof_apache_rule_with_its_rereads() -> None:
    (move,) = plan({TP("orders", 0): 180})
    assert (move.target_offset, move.exact, move.rereads_at_most) == (100, False, 80)


def test_topics_that_came_from_the_target_go_home_in_reverse() -> None:
    (move,) = plan({TP("backup.payments", 0): 20})
    assert move.target == TP("payments", 0)
    assert (move.target_offset, move.exact) == (25, True)


def test_untranslatable_partitions_are_listed_with_a_reason_and_not_guessed() -> None:
    moves = plan(
        {
            TP("private", 0): 5,
            TP("fresh", 0): 5,
            TP("backup.payments", 0): 0,  # before every sync
            TP("__consumer_offsets", 3): 1,
        }
    )
    by_source = {m.source.topic: m for m in moves}
    assert all(not m.translated for m in moves)
    assert "not mirrored" in by_source["private"].note
    assert "has not mirrored this partition" in by_source["fresh"].note
    assert by_source["fresh"].target == TP("primary.fresh", 0)
    assert "no offset sync at or below 0" in by_source["backup.payments"].note
    assert "not mirrored" in by_source["__consumer_offsets"].note
    no_syncs = plan({TP("orders", 0): 5}, forward=None)
    assert "no offset syncs topic for primary->backup" in no_syncs[0].note


def test_commits_never_move_backwards_unless_forced() -> None:
    moves = plan(
        {TP("orders", 0): 42, TP("orders", 1): 7, TP("backup.payments", 0): 20},
        current={TP("primary.orders", 0): OffsetAndMetadata(60)},
    )
    p = FailoverPlan("failover", "g", "primary", "backup", "offset syncs", tuple(moves))
    by_source = {m.source: m for m in p.moves}
    assert by_source[TP("orders", 0)].current_target_offset == 60
    current = {
        TP("primary.orders", 0): OffsetAndMetadata(60),
        TP("payments", 0): OffsetAndMetadata(25),  # already there: nothing to write
    }
    commit, kept = commits_for(p, current, force=False)
    assert commit == {}  # orders-1 has no sync, payments is already at 25
    assert kept == {TP("primary.orders", 0): (60, 42)}
    commit, kept = commits_for(p, current, force=True)
    assert commit == {TP("primary.orders", 0): OffsetAndMetadata(42, "m")} and kept == {}


def test_plan_renders_as_a_table_and_as_json() -> None:
    moves = plan({TP("orders", 0): 42, TP("orders", 0 + 1): 7})
    p = FailoverPlan("failover", "g", "primary", "backup", "offset syncs", tuple(moves), ("n1",))
    text = render_plan(p)
    assert "failover of group 'g': primary -> backup (from offset syncs)" in text
    assert "note: n1" in text
    assert "primary.orders-0" in text and "orders-1" in text
    assert "1 of 2 partition(s) translated; records re-read: at most 0" in text
    doc = json.loads(json.dumps(p.to_json()))
    assert doc["partitions"][0]["target_offset"] == 42 and doc["partitions"][0]["exact"] is True
    assert doc["partitions"][1]["target_offset"] is None
    assert doc["rereads_at_most"] == 0
