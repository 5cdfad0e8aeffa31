"""Reverse translation (failback) checked against a simulated mirror, as test_offsets_exact does.

The simulation keeps the truth: which upstream record each downstream offset holds. For every
downstream commit D the translated upstream offset U must skip nothing (every upstream record
below U was read downstream before D) and, when it says exact, re-read nothing.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mm2.offset_syncs.exact_index import HOP, RUN, PrevSync
from mm2.offset_syncs.reverse import ReverseTranslator
from mm2.records import OffsetSync, TopicPartition
from tests.support.mirror_sim import EVENTS, TP, source_offsets
from tests.support.mirror_sim import Mirror as SimMirror


class Mirror(SimMirror):
    def reverse(self) -> ReverseTranslator:
        r = ReverseTranslator()
        for sync, prev in self.read_back():
            r.handle(sync, prev)
        return r


def check(mirror: Mirror, *, expect_all_exact: bool) -> int:
    """Checks every downstream commit; returns how many translated."""
    r = mirror.reverse()
    first_sync = min((s.downstream_offset for s, _ in mirror.topic), default=None)
    translated = 0
    for commit in range(len(mirror.target) + 1):
        tr = r.translate(TP, commit)
        if tr is None:
            assert first_sync is None or commit < first_sync, commit
            continue
        translated += 1
        read = set(mirror.target[:commit])
        # Never skip: every source record below U was read downstream before the commit.
        skipped = [u for u in mirror.source if u < tr.upstream and u not in read]
        assert not skipped, (commit, tr, skipped)
        # Re-read: source records at or after U that were read already (duplicates aside).
        again = [
            u
            for u in mirror.source
            if u >= tr.upstream and u in read and mirror.target.count(u) == 1
        ]
        assert len(again) <= tr.rereads_at_most, (commit, tr, again)
        if tr.exact:
            assert not again, (commit, tr, again)
        if expect_all_exact:
            assert tr.exact, (commit, tr)
    return translated


@settings(max_examples=200, deadline=None)
@given(source_offsets(), st.lists(st.integers(1, 12), max_size=20), st.integers(1, 8))
def test_clean_mirror_translates_every_commit_back_exactly(
    source: list[int], batches: list[int], lag: int
) -> None:
    mirror = Mirror(source, lag)
    mirror.copy_in_batches(batches)
    assert check(mirror, expect_all_exact=True) == len(mirror.target) + 1


@settings(max_examples=200, deadline=None)
@given(source_offsets(), st.integers(1, 40), st.integers(1, 8))
def test_partially_mirrored_topic_resumes_at_the_first_record_not_copied(
    source: list[int], copied: int, lag: int
) -> None:
    mirror = Mirror(source, lag)
    mirror.copy(0, min(copied, len(source)))
    r = mirror.reverse()
    end = r.translate(TP, len(mirror.target))
    assert end is not None and end.exact
    assert end.upstream == mirror.target[-1] + 1  # the next record A has that B never got


@settings(max_examples=300, deadline=None)
@given(
    source_offsets(),
    EVENTS,
    st.integers(1, 8),
)
def test_crashes_reruns_and_lost_syncs_never_skip_a_record(
    source: list[int], steps: list[tuple[int, str]], lag: int
) -> None:
    mirror = Mirror(source, lag)
    mirror.copy_with_events(steps)
    check(mirror, expect_all_exact=False)


def test_foreign_syncs_without_headers_resume_after_the_last_sync_read() -> None:
    r = ReverseTranslator()
    r.handle(OffsetSync("orders", 0, 100, 200), None)
    r.handle(OffsetSync("orders", 0, 150, 250), None)
    at, between, before = r.translate(TP, 250), r.translate(TP, 220), r.translate(TP, 199)
    assert at is not None and (at.upstream, at.exact, at.rereads_at_most) == (150, True, 0)
    assert between is not None and (between.upstream, between.exact) == (101, False)
    assert between.rereads_at_most == 19  # downstream 201..219 were read and come again
    assert before is None
    assert r.translate(TopicPartition("other", 0), 5) is None


def test_proven_run_and_hop_translate_exactly() -> None:
    r = ReverseTranslator()
    r.handle(OffsetSync("orders", 0, 100, 200), None)
    r.handle(OffsetSync("orders", 0, 150, 250), PrevSync(100, 200, RUN))
    r.handle(OffsetSync("orders", 0, 160, 251), PrevSync(150, 250, HOP))
    inside, hop = r.translate(TP, 220), r.translate(TP, 251)
    assert inside is not None and (inside.upstream, inside.exact) == (120, True)
    assert hop is not None and (hop.upstream, hop.exact) == (160, True)


def test_truncated_target_forgets_older_syncs() -> None:
    r = ReverseTranslator()
    r.handle(OffsetSync("orders", 0, 100, 200), None)
    r.handle(OffsetSync("orders", 0, 300, 5), None)  # target recreated
    assert r.translate(TP, 210) is not None  # after the new sync: u + 1
    assert r.translate(TP, 4) is None
    tr = r.translate(TP, 210)
    assert tr is not None and tr.upstream == 301
