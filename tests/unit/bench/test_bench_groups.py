"""W5's arithmetic: a source commit reaches the target at its exact translation, not before."""

from __future__ import annotations

from bench.group_latency import Commit, latencies
from bench.groups import group_markdown


def test_latency_runs_from_the_commit_to_the_first_poll_at_the_exact_translation() -> None:
    # Source records 0..9 of partition 0 landed at target offsets 0..4 and, past a commit
    # marker at 5, 6..10: a commit at source offset 8 translates to one past record 7's copy.
    copies = {0: {i: (i if i < 5 else i + 1) for i in range(10)}}
    commits = [Commit(10.0, {0: 5}), Commit(10.2, {0: 5}), Commit(10.4, {0: 8})]
    seen = [
        (10.1, {0: 4}),  # one short of commit 1's translation (5)
        (10.3, {0: 5}),  # commit 1 reached
        (10.5, {0: 6}),  # the marker's offset: one short of commit 3's translation (9)
        (11.9, {0: 9}),
    ]
    reached, missed = latencies(commits, seen, copies)
    # commit 2 repeats commit 1's offset and is not counted again
    assert [(at, round(x, 3)) for at, x in reached] == [(10.0, 0.3), (10.4, 1.5)]
    assert missed == 0


def test_a_commit_never_reached_or_of_a_record_never_copied_is_missed() -> None:
    copies = {0: {0: 0, 1: 1}}
    commits = [Commit(1.0, {0: 2}), Commit(2.0, {0: 3})]  # record 2 was never copied
    reached, missed = latencies(commits, [(1.5, {0: 1})], copies)
    assert reached == []
    assert missed == 2


def test_the_table_names_both_systems_and_says_when_a_group_was_never_found() -> None:
    block = {
        "mm2": {
            "variants": {
                "defaults": {
                    "latency_s": {"p50": 0.9, "p99": 2.4, "max": 2.6},
                    "latency_hist": [(90.0, 1.2)],
                    "found_latency_s": {"p50": 0.6, "p99": 1.4, "max": 1.8},
                    "found_latency_hist": [(90.0, 1.0)],
                    "reached": 10,
                    "missed": 0,
                    "new_group_s": 2.5,
                }
            }
        },
        "apache": {
            "variants": {
                "defaults": {
                    "latency_s": {},
                    "latency_hist": [],
                    "reached": 0,
                    "missed": 10,
                    "new_group_s": None,
                }
            }
        },
    }
    text = "\n".join(group_markdown(block))
    assert (
        "| mm2 (this project) | defaults | all | 0.90 | 1.20 | 2.40 | 2.60 | 10 of 10 | 2.50 |"
        in text
    )
    assert (
        "| mm2 (this project) | defaults | once found | 0.60 | 1.00 | 1.40 | 1.80 |  | 2.50 "
        "| p50 <= 1, p99 <= 2, new <= 5: yes |"
    ) in text
    assert "| Apache MM2 | defaults | all | not in run |" in text
