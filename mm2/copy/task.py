"""One copy task from start to end, as a Spark task runs it (mm2.pipeline.copy_job).

Its producer first fences every earlier holder of its transactional id; a task that Spark runs
again (its executor was lost) then takes the partitions added since the epoch began and reads
the positions committed since, so that nothing an earlier attempt, a zombie or a deposed
leader's planner committed is copied twice. An error leaves the task typed (mm2.copy.failure).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from mm2.copy.failure import CopyFailure, CopyTaskFailed
from mm2.copy.loop import CopyLoop
from mm2.copy.positions import TaskPositions
from mm2.copy.ready import CopyReady, announce
from mm2.copy.spec import CopyTaskSpec
from mm2.kafka.config_topic import check_leader_epoch

__all__ = ["run_copy_task"]

log = logging.getLogger(__name__)


def _partitions(spec: CopyTaskSpec, shown: int = 6) -> str:
    names = [f"{a.topic}-{a.partition}" for a in spec.partitions]
    if len(names) <= shown:
        return ", ".join(names)
    return f"{', '.join(names[:shown])} and {len(names) - shown} more partitions"


def run_copy_task(
    spec: CopyTaskSpec,
    *,
    attempt: int,
    positions: TaskPositions | None,
    keep_going: Callable[[], bool] = lambda: True,
    open_loop: Callable[[CopyTaskSpec], CopyLoop] = CopyLoop.open,
) -> None:
    """Copy until keep_going() turns false or the task is cancelled; raises CopyTaskFailed."""
    try:
        _run(spec, attempt, positions, keep_going, open_loop)
    except Exception as exc:
        raise CopyTaskFailed(CopyFailure.of(exc)) from exc


def _run(
    spec: CopyTaskSpec,
    attempt: int,
    positions: TaskPositions | None,
    keep_going: Callable[[], bool],
    open_loop: Callable[[CopyTaskSpec], CopyLoop],
) -> None:
    began = time.monotonic()
    if spec.leader_topic:  # a deposed leader's task would fence the new leader's: refused
        check_leader_epoch(spec.offsets_consumer or {}, spec.leader_topic, spec.leader_epoch)
    loop = open_loop(spec)  # its producer has now fenced every earlier holder of its id
    try:
        if attempt > 0:  # the partitions the planner added while the first attempt ran
            taken = loop.catch_up_assignment()
            if taken:
                log.info(
                    "%s task %d (attempt %d): also takes %d partition(s) added since the "
                    "epoch began",
                    spec.settings.flow,
                    spec.task,
                    attempt,
                    len(taken),
                )
        loop.catch_up_schema_ids()  # the map says what it read
        # only the partitions of the offsets topic that hold this task's keys are waited for
        committed = loop.committed(60.0)
        if committed is not None:
            moved = loop.resume_from(committed)
            if moved:
                log.warning(
                    "%s task %d (attempt %d): positions committed since the epoch began; "
                    "resumes from the committed positions (%s)",
                    spec.settings.flow,
                    spec.task,
                    attempt,
                    ", ".join(moved),
                )
        log.info(
            "%s task %d: copying %s (ready in %.1f s)",
            spec.settings.flow,
            spec.task,
            _partitions(spec),
            time.monotonic() - began,
        )
        if positions is not None:  # its planner shows it RUNNING from now on (mm2.copy.ready)
            announce(
                positions.topic,
                positions.producer_config,
                CopyReady(spec.settings.flow, spec.task, spec.epoch),
            )
        loop.run(keep_going)
    except BaseException:
        try:  # the error that ended the task is the one to report, not one from closing
            loop.close()
        except Exception as exc:  # noqa: BLE001 - logged; the task's own error follows
            log.info("%s task %d: closing after a failure: %r", spec.settings.flow, spec.task, exc)
        raise
    loop.close()
