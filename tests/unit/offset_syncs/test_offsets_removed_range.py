"""Commits older than every offset sync kept, in offsets compaction removed.

The source below lost its first 19,010 offsets to compaction before the mirror started: the
mirror's first copy, and its oldest sync, is of offset 19,010. A group committed at c below
that reads the first record the source holds at or after c next; the translator is told that
offset (`first_record`, read from the source in production) and resumes the group at that
record's copy, but only where the syncs say exactly where (or how nearly) it was copied.
"""

from __future__ import annotations

from bisect import bisect_left

import pytest

from mm2.client.plan import plan_partitions
from mm2.offset_syncs.checkpoint_rules import checkpoints_for_group
from mm2.offset_syncs.exact_index import HOP, RUN, PrevSync
from mm2.offset_syncs.translator import FirstRecord, OffsetTranslator
from mm2.policies.replication import DefaultReplicationPolicy
from mm2.records import OffsetAndMetadata, OffsetSync, TopicPartition

TP = TopicPartition("compacted", 0)
FIRST = 19_010
# The surviving records: every third offset from FIRST, 300 of them (no markers downstream).
SURVIVING = list(range(FIRST, FIRST + 900, 3))


def mirrored(ups: list[int], *, proven: bool = True) -> OffsetTranslator:
    """Syncs as our writer writes them for records copied one run each: a hop between two
    surviving records, each record its own copy at downstream i."""
    t = OffsetTranslator(initialization_must_read_to_end=False)
    prev: tuple[int, int] | None = None
    for down, up in enumerate(ups):
        header = None if prev is None or not proven else PrevSync(*prev, HOP)
        t.handle(OffsetSync(TP.topic, TP.partition, up, down), header)
        prev = (up, down)
    t.mark_read_to_end()
    return t


def source_holds(ups: list[int]) -> FirstRecord:
    def first_record(tp: TopicPartition, offset: int) -> int | None:
        assert tp == TP
        i = bisect_left(ups, offset)
        return ups[i] if i < len(ups) else None

    return first_record


@pytest.mark.parametrize("committed", [0, 1, 5_000, FIRST - 3, FIRST - 1])
def test_a_commit_in_the_removed_range_resumes_at_the_copy_of_the_first_surviving_record(
    committed: int,
) -> None:
    t = mirrored(SURVIVING)
    before = t.translate(TP, committed)
    assert before is not None and before.downstream == -1  # the syncs alone cannot say
    tr = t.translate(TP, committed, source_holds(SURVIVING))
    assert tr is not None
    assert (tr.upstream, tr.downstream, tr.exact, tr.rereads_at_most) == (committed, 0, True, 0)
    assert tr.via == FIRST
    assert t.downstream(TP, committed, source_holds(SURVIVING)) == 0


def test_the_source_is_not_read_for_offsets_the_syncs_translate() -> None:
    t = mirrored(SURVIVING)

    def never(tp: TopicPartition, offset: int) -> int | None:
        raise AssertionError(f"asked about {tp}@{offset}")

    for committed, down in ((FIRST, 0), (FIRST + 1, 1), (FIRST + 3, 1), (FIRST + 4, 2)):
        tr = t.translate(TP, committed, never)
        assert tr is not None and (tr.downstream, tr.exact, tr.via) == (down, True, None)


def test_a_first_record_whose_copy_was_compacted_later_resumes_at_the_next_copy() -> None:
    """The oldest sync's record was compacted away on the source after it was copied: the
    first record the source holds now is a later one, whose copy the syncs know exactly."""
    t = mirrored(SURVIVING)
    now = SURVIVING[3:]  # 19,010 .. 19,016 gone since
    tr = t.translate(TP, 100, source_holds(now))
    assert tr is not None and (tr.downstream, tr.exact, tr.via) == (3, True, SURVIVING[3])


def test_without_proof_of_the_stretch_the_later_record_translates_as_apache_would() -> None:
    """Syncs without our header (a foreign writer): the first record's own translation, with
    its bound, never a guess below it."""
    t = OffsetTranslator(initialization_must_read_to_end=False)
    t.handle(OffsetSync(TP.topic, TP.partition, FIRST, 0), None)
    t.handle(OffsetSync(TP.topic, TP.partition, FIRST + 90, 30), None)
    t.mark_read_to_end()
    holds = [FIRST + 9, FIRST + 90]  # the record at FIRST was compacted after it was copied
    tr = t.translate(TP, 7, source_holds(holds))
    assert tr is not None
    assert (tr.downstream, tr.exact, tr.rereads_at_most, tr.via) == (1, False, 8, FIRST + 9)


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        (None, "the source could not say (below its log start, unreachable, nothing after)"),
        (FIRST - 5, "a surviving record older than every sync: copied or not, nobody knows"),
        (42, "the committed offset itself holds a record, older than every sync"),
        (41, "an answer below the commit is no answer"),
    ],
)
def test_still_refused_where_it_cannot_be_proven(answer: int | None, why: str) -> None:
    t = mirrored(SURVIVING)
    asked: list[int] = []

    def first_record(tp: TopicPartition, offset: int) -> int | None:
        asked.append(offset)
        return answer

    tr = t.translate(TP, 42, first_record)
    assert tr is not None and tr.downstream == -1 and tr.via is None, why
    assert asked == [42]
    assert t.downstream(TP, 42, first_record) == -1


def test_a_partition_without_syncs_stays_unknown() -> None:
    t = mirrored(SURVIVING)
    other = TopicPartition("compacted", 1)
    assert t.translate(other, 5, lambda tp, offset: FIRST) is None


def test_checkpoints_are_written_for_groups_in_the_removed_range() -> None:
    t = mirrored(SURVIVING)
    first_record = source_holds(SURVIVING)
    commits = {TP: OffsetAndMetadata(12_345, "m"), TopicPartition("compacted", 1): None}
    without = checkpoints_for_group(
        "parked",
        commits,
        translate=t.downstream,
        rename=lambda tp: tp,
        previous={},
        topic_filter=lambda topic: True,
    )
    assert without == []
    (cp,) = checkpoints_for_group(
        "parked",
        commits,
        translate=lambda tp, offset: t.downstream(tp, offset, first_record),
        rename=lambda tp: tp,
        previous={},
        topic_filter=lambda topic: True,
    )
    assert (cp.upstream_offset, cp.downstream_offset, cp.metadata) == (12_345, 0, "m")


def test_the_failover_plan_says_which_record_it_resumes_at_and_keeps_the_refusal() -> None:
    policy = DefaultReplicationPolicy()
    commits = {
        TP: OffsetAndMetadata(500, ""),
        TopicPartition("compacted", 1): OffsetAndMetadata(500, ""),
    }
    t = mirrored(SURVIVING)
    t.handle(OffsetSync("compacted", 1, FIRST, 0), None)

    def first_record(tp: TopicPartition, offset: int) -> int | None:
        # Partition 1 holds a record at 600 the mirror never copied (it started later).
        return FIRST if tp.partition == 0 else 600

    parked, refused = plan_partitions(
        commits,
        policy=policy,
        source="primary",
        target="backup",
        mirrored=lambda t: True,
        forward=t,
        backward=None,
        current={},
        first_record=first_record,
    )
    assert parked.target == TopicPartition("primary.compacted", 0)
    assert (parked.target_offset, parked.exact, parked.rereads_at_most) == (0, True, 0)
    assert parked.note == f"exact: as {FIRST}, the first record primary holds at or after 500"
    assert not refused.translated
    assert refused.note == "older than every offset sync kept: cannot translate without guessing"


def test_a_run_anchored_oldest_sync_translates_the_same() -> None:
    """A clean stretch after the removed range: one run from the oldest sync."""
    t = OffsetTranslator(initialization_must_read_to_end=False)
    t.handle(OffsetSync(TP.topic, TP.partition, FIRST, 7), None)
    t.handle(OffsetSync(TP.topic, TP.partition, FIRST + 50, 57), PrevSync(FIRST, 7, RUN))
    t.mark_read_to_end()
    tr = t.translate(TP, 3, lambda tp, offset: FIRST)
    assert tr is not None and (tr.downstream, tr.exact) == (7, True)
