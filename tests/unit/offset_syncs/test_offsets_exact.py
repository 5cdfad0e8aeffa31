"""Exact translation: a simulated mirror (gaps, batches, crashes, lost syncs) checked end to end.

The writer side is the real SyncTrail, the reader the real OffsetTranslator; the simulation
keeps the truth (which upstream record every downstream offset holds), so each translated
offset is checked against it: never skip a record, and re-read nothing when it says exact.
"""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from mm2.offset_syncs.exact_index import (
    HOP,
    RUN,
    ExactIndex,
    PrevSync,
    decode_prev_sync,
    encode_prev_sync,
)
from mm2.offset_syncs.translator import OffsetTranslator
from mm2.records import OffsetSync
from tests.support.mirror_sim import EVENTS, TP, source_offsets
from tests.support.mirror_sim import Mirror as SimMirror


class Mirror(SimMirror):
    def translator(self) -> OffsetTranslator:
        t = OffsetTranslator()
        for sync, prev in self.read_back():
            t.handle(sync, prev)
        t.mark_read_to_end()
        return t


def check(mirror: Mirror, *, expect_all_exact: bool) -> None:
    t = mirror.translator()
    mirrored = sorted(set(mirror.target))
    if not mirrored:
        return
    for c in range(mirrored[0], mirrored[-1] + 2):
        tr = t.translate(TP, c)
        if tr is None:  # every sync of the partition was lost
            assert not expect_all_exact and not mirror.topic
            continue
        if tr.downstream < 0:
            assert not expect_all_exact
            continue
        # Never skip: every mirrored record at or after c has a copy at or after D.
        for up in (u for u in mirrored if u >= c):
            copies = [d for d, u in enumerate(mirror.target) if u == up]
            assert max(copies) >= tr.downstream, (c, tr, up, copies)
        if tr.exact and tr.downstream < len(mirror.target):
            # Exact: the group re-reads no record, except copies the mirror itself duplicated.
            held = mirror.target[tr.downstream]
            duplicate = mirror.target.index(held) < tr.downstream
            assert held >= c or duplicate, (c, tr)
        if expect_all_exact:
            assert tr.exact, (c, tr)


@settings(max_examples=200, deadline=None)
@given(source_offsets(), st.lists(st.integers(1, 12), max_size=20), st.integers(1, 8))
def test_clean_mirror_translates_every_offset_exactly(
    source: list[int], batches: list[int], lag: int
) -> None:
    mirror = Mirror(source, lag)
    mirror.copy_in_batches(batches)
    check(mirror, expect_all_exact=True)


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


def test_foreign_syncs_without_headers_fall_back_to_apache() -> None:
    t = OffsetTranslator()
    t.mark_read_to_end()
    t.handle(OffsetSync("orders", 0, 100, 200), None)
    t.handle(OffsetSync("orders", 0, 150, 250), None)
    middle, old = t.translate(TP, 120), t.translate(TP, 99)
    assert middle is not None and old is not None
    assert (middle.downstream, middle.exact, middle.rereads_at_most) == (201, False, 19)
    assert old.downstream == -1


def test_a_run_between_consecutive_syncs_translates_inside_it() -> None:
    t = OffsetTranslator()
    t.mark_read_to_end()
    t.handle(OffsetSync("orders", 0, 100, 200), None)
    t.handle(OffsetSync("orders", 0, 150, 250), PrevSync(100, 200, RUN))
    t.handle(OffsetSync("orders", 0, 160, 251), PrevSync(150, 250, HOP))
    inside, hop = t.translate(TP, 120), t.translate(TP, 155)
    assert inside is not None and (inside.downstream, inside.exact) == (220, True)
    assert hop is not None and (hop.downstream, hop.exact) == (251, True)


def test_header_naming_another_sync_proves_nothing() -> None:
    index = ExactIndex()
    index.add(OffsetSync("orders", 0, 100, 200), None)
    index.add(OffsetSync("orders", 0, 150, 250), PrevSync(120, 220, RUN))
    assert index.translate(TP, 120) is None


def test_index_round_trips_through_json() -> None:
    index = ExactIndex()
    index.add(OffsetSync("orders", 0, 0, 0), None)
    index.add(OffsetSync("orders", 0, 9, 9), PrevSync(0, 0, RUN))
    index.add(OffsetSync("orders", 0, 20, 10), PrevSync(9, 9, HOP))
    again = ExactIndex.from_json(json.loads(json.dumps(index.to_json())))
    # The run 0..9 and the hop 9 -> 20 touch: one segment of three points.
    assert again.segments(TP) == index.segments(TP) and len(index.segments(TP)) == 1
    assert index.segments(TP)[0].points() == [(0, 0), (9, 9), (20, 10)]
    assert again.last_sync(TP) == (20, 10)
    assert [again.translate(TP, c) for c in (5, 15, 20)] == [5, 10, 10]


def test_malformed_headers_are_ignored() -> None:
    assert decode_prev_sync(b"\x00" * 16) is None
    assert decode_prev_sync(encode_prev_sync(PrevSync(1, 2, RUN))[:-1] + b"\x07") is None


def test_translator_state_round_trips_and_keeps_translating() -> None:
    mirror = Mirror([0, 1, 2, 5, 6, 9, 10, 11], lag=2)
    mirror.copy(0, 4)
    mirror.copy(4, 8)
    before = mirror.translator()
    state = json.loads(json.dumps(before.to_json()))
    after = OffsetTranslator.from_json(state)
    after.mark_read_to_end()
    for c in range(0, 13):
        assert after.translate(TP, c) == before.translate(TP, c)
    assert after.store.syncs(TP) == before.store.syncs(TP)


def test_lookups_at_the_edges_of_two_segments_and_the_gap_between() -> None:
    # Proven: 100..150 -> 200..250 (a run), then 160..180 -> 260..280 (a run after a sync
    # without header, so the stretch 150 -> 160 between them is not proven).
    index = ExactIndex()
    index.add(OffsetSync("orders", 0, 100, 200), None)
    index.add(OffsetSync("orders", 0, 150, 250), PrevSync(100, 200, RUN))
    index.add(OffsetSync("orders", 0, 160, 260), None)
    index.add(OffsetSync("orders", 0, 180, 280), PrevSync(160, 260, RUN))
    first, second = index.segments(TP)
    offsets = (99, 100, 150, 151, 159, 160, 180, 181)
    held = [None, first, first, None, None, second, second, None]
    assert [index.segment_for(TP, c) for c in offsets] == held
    below = [None, None, None, (150, 250), (150, 250), None, None, (180, 280)]
    assert [index.proven_below(TP, c) for c in offsets] == below
    downstream = (199, 200, 250, 251, 259, 260, 280, 281)
    back = [None, 100, 150, None, None, 160, 180, None]
    assert [index.translate_back(TP, d) for d in downstream] == back
    other = OffsetSync("other", 0, 0, 0).topic_partition
    assert index.segment_for(other, 120) is None and index.proven_below(other, 200) is None
    assert index.translate_back(other, 220) is None


def test_of_two_segments_that_touch_the_later_holds_the_shared_offset() -> None:
    # Two points per segment: each hop past the first starts a segment at the last one's end.
    index = ExactIndex(max_offsets=200)
    index.add(OffsetSync("orders", 0, 0, 0), None)
    for n in range(1, 14):
        index.add(OffsetSync("orders", 0, 2 * n, n), PrevSync(2 * n - 2, n - 1, HOP))
    segments = index.segments(TP)
    assert len(segments) >= 2
    shared = segments[1].u1
    assert shared == segments[0].u2
    assert index.segment_for(TP, shared) is segments[1]
    assert index.translate_back(TP, segments[1].d1) == shared
    assert index.proven_below(TP, shared) is None
    assert index.proven_below(TP, shared + 1) is None
