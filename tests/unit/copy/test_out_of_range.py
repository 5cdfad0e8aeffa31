"""mm2.copy.out_of_range: where copying goes on when the source has no record at the next offset."""

from __future__ import annotations

import logging

import pytest
from confluent_kafka import KafkaError

from mm2.copy.out_of_range import Resume, where_to_resume

OUT = KafkaError(KafkaError._AUTO_OFFSET_RESET, "Offset out of range")
CUT = KafkaError(KafkaError._LOG_TRUNCATION, "Partition log truncation detected")


def test_below_the_log_start_copying_goes_on_there_and_counts_what_was_deleted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING):
        assert where_to_resume("a->b", "orders-0", 10, OUT, 25, 40) == Resume(25, gone=15)
    assert "offsets 10-24 were deleted" in caplog.text and "15 record(s)" in caplog.text


def test_beyond_the_log_end_the_log_is_copied_again_from_its_start(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING):
        assert where_to_resume("a->b", "orders-0", 50, OUT, 5, 40) == Resume(5, truncated=1)
    assert "beyond the source's log end 40" in caplog.text


def test_a_truncation_the_leader_detected_starts_again_at_the_log_start_inside_the_log() -> None:
    # The position is within 5..40, but the leader's log no longer holds its record's epoch.
    assert where_to_resume("a->b", "orders-0", 30, CUT, 5, 40) == Resume(5, truncated=1)


def test_a_position_inside_the_log_is_read_again_where_it_was() -> None:
    assert where_to_resume("a->b", "orders-0", 30, OUT, 5, 40) == Resume(30)
