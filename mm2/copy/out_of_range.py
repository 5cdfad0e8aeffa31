"""Where a copy task goes on when the source has no record at the offset it reads next.

Below the log start, the records in between were deleted (retention, DeleteRecords) before they
could be copied: copying goes on at the log start. Beyond the log end, or when the leader says
its log no longer holds the record the position follows under its leader epoch, the log was
truncated (an unclean leader election) or the position was set past it: the offset where the
log was cut is not known (records written since have taken the offsets after it), so copying
starts again at the log start: records come twice, none is skipped. Either way the task says so
at WARN, and the copy loop counts it in the stats of a position written at once (the metrics
mm2_source_records_gone and mm2_source_log_truncations), never silently.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from confluent_kafka import KafkaError

__all__ = ["Resume", "where_to_resume"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Resume:
    """The offset copying goes on at, the records deleted before they were copied, and whether
    the log was found truncated below the position (1) or not (0)."""

    at: int
    gone: int = 0
    truncated: int = 0


def where_to_resume(flow: str, where: str, at: int, err: KafkaError, low: int, high: int) -> Resume:
    """`at`: the offset the task was to read next; `low`..`high`: the source's log start and end;
    `where`: the partition, as `topic-partition`, for the log line."""
    # The leader's log no longer holds the record the position follows under its leader
    # epoch: it was cut below the position and may have been refilled since.
    cut = err.code() == KafkaError._LOG_TRUNCATION
    if cut or at > high:
        why = (
            f"{err.str()}: the source's log was truncated below the position {at} (an "
            "unclean leader election)"
            if cut
            else f"the position {at} is beyond the source's log end {high}: the log was "
            "truncated (an unclean leader election) or the position was set past it"
        )
        log.warning(
            "%s: %s: %s; copying it again from the log start %d, so that no record "
            "written since is skipped (records copied before come again)",
            flow,
            where,
            why,
            low,
        )
        return Resume(low, truncated=1)
    if at < low:
        log.warning(
            "%s: %s: offsets %d-%d were deleted from the source (retention or "
            "DeleteRecords) before they were copied: %d record(s) can never be "
            "copied; copying on from the log start %d",
            flow,
            where,
            at,
            low - 1,
            low - at,
            low,
        )
        return Resume(low, gone=low - at)
    log.info(
        "%s: %s: %s; reading again from %d (the log runs %d-%d)",
        flow,
        where,
        err.str(),
        at,
        low,
        high,
    )
    return Resume(at)
