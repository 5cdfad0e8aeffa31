"""A planned switchover of a flow A->B: drain, move every group, stop, reverse, report.

The steps (docs/architecture.md, "Planned switchover"):
1. check: the flow runs in the mirror, the reverse flow B->A exists when it is to be started,
   and which groups would move (a group with members on B, or still consuming on A, is named
   and will be left alone);
2. drain: wait until every partition's lag is 0 and the source's ends stay put between two
   reads (the producers are the operator's to stop: the wait says which partitions still move);
3. groups: every mirrored group's commits on A, translated, committed on B; a group that still
   has members on A is not moved (its commits still move: what it reads after the translation
   would be read again on B, and "exact" would not be true) and the step is marked failed, so
   the report is not done until it is moved by a run after its consumers stopped;
4. stop: the flow A->B paused;
5. registries (a flow whose clusters both name a Schema Registry): B's registry put in
   READWRITE for the producers that move there (mm2.client.registries), and what B->A will do
   with schema IDs in A's; a registry that fails marks the step failed, the others still run;
6. reverse: with `start_reverse`, the flow B->A resumed;
7. report: per partition the source end at the switch, how far it was copied and what was not
   (the recovery point, in records and seconds), each step's duration, each group's move.

A dry run does the check and shows the lag, the group plans and the registries' modes without
waiting or changing anything. Each step is safe to run again: commits never move a group
backwards (a group that consumed further on B keeps its place), pausing a paused flow or
resuming a running one changes nothing, and a READWRITE registry is left as it is, so running
the command again after a failure half-way does nothing twice.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import replace

from mm2.client.failover import (
    apply_failover,
    mirrored_groups,
    target_group_admin,
    translate_all_groups,
)
from mm2.client.lag import LagReader, LagReport
from mm2.client.plan import FailoverError, FailoverPlan
from mm2.client.registries import make_target_writable, mirrors_schemas
from mm2.client.switchover_report import (
    FlowControl,
    GroupMove,
    Step,
    SwitchoverError,
    SwitchoverReport,
)
from mm2.config import Flow
from mm2.kafka.groups import GroupAdmin

__all__ = ["switchover"]


def _data_only(flow: Flow, lag: LagReport) -> LagReport:
    """The lag without the heartbeats topics: the other flow's heartbeat connector writes
    there every second, which is no producer of the operator's and nothing to wait for."""
    policy = flow.replication_policy()
    kept = tuple(p for p in lag.partitions if not policy.is_heartbeats_topic(p.topic))
    return replace(lag, partitions=kept)


class _Run:
    """One switchover's steps, timed, with what each said."""

    def __init__(self, report: SwitchoverReport, say: Callable[[str], None]) -> None:
        self.report, self._say = report, say
        self._lines: list[str] = []
        self._failed = False

    def say(self, line: str) -> None:
        self._lines.append(line)
        self._say(line)

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        started = time.monotonic()
        self._lines, self._failed = [], False
        self._say(f"[{name}]")
        try:
            yield
        finally:
            seconds = time.monotonic() - started
            self.report.steps.append(Step(name, seconds, tuple(self._lines), self._failed))

    def mark_failed(self) -> None:
        """The running step failed without stopping the switchover."""
        self._failed = True

    def fail(self, message: str) -> SwitchoverError:
        self._failed = True
        self.say(f"stopped: {message}")
        return SwitchoverError(message, self.report)


def switchover(
    flow: Flow,
    control: FlowControl,
    *,
    reverse_flow: Flow | None = None,
    dry_run: bool = False,
    start_reverse: bool = False,
    drain_timeout: float = 300.0,
    timeout: float = 15.0,
    say: Callable[[str], None] = lambda line: None,
    poll_seconds: float = 2.0,
) -> SwitchoverReport:
    """Switch `flow` (A->B) over to B; see the module docstring. Raises SwitchoverError, with
    the report so far, when a step cannot go on (nothing after it is done)."""
    run = _Run(SwitchoverReport(flow.name, dry_run), say)
    a, b = flow.source, flow.target
    with run.step("check"):
        _check(run, flow, control, reverse_flow, start_reverse)
        plans = translate_all_groups(flow, reverse_flow=reverse_flow, timeout=timeout)
        busy = _busy_groups(flow, plans, timeout)
        reading = _reading_on_source(flow, [p.group for p in plans], timeout)
        for plan in plans:
            why = reading.get(plan.group) or busy.get(plan.committed_as, "")
            run.say(
                f"group {plan.group!r}: {len(plan.translated)} partition(s) to commit on {b}"
                + (" as " + repr(plan.committed_as) if plan.target_group else "")
                + (", exact" if plan.exact else f", re-read at most {plan.rereads_at_most}")
                + (f"; left alone: {why}" if why else "")
            )
        if not plans:
            run.say("no consumer group to move")
    reader = LagReader(flow, timeout=timeout)
    try:
        if dry_run:
            with run.step("lag now (dry run: no wait)"):
                lag = _data_only(flow, reader.read())
                run.report.lag = lag
                _say_lag(run, lag, None)
                run.say(
                    f"dry run: nothing changed; {a}->{b} would be drained, {len(plans)} "
                    f"group(s) committed on {b}, {a}->{b} paused"
                    + (f", {b}'s registry READWRITE" if mirrors_schemas(flow) else "")
                    + (f", {b}->{a} resumed" if start_reverse else "")
                )
            _registries(run, flow, reverse_flow, dry_run=True)
            return run.report
        with run.step("drain"):
            run.report.lag = _drain(
                run, lambda: _data_only(flow, reader.read()), drain_timeout, poll_seconds
            )
    finally:
        reader.close()
    with run.step("groups"):
        run.report.groups = _move_groups(run, flow, reverse_flow, timeout)
    with run.step("stop"):
        _set_state(run, control, a, b, "PAUSED", control.pause)
    _registries(run, flow, reverse_flow, dry_run=False)
    if start_reverse:
        with run.step("reverse"):
            _set_state(run, control, b, a, "RUNNING", control.resume)
    run.report.done = not run.report.failed_steps
    return run.report


def _registries(run: _Run, flow: Flow, reverse_flow: Flow | None, *, dry_run: bool) -> None:
    """B's registry made writable once A->B is paused (its sync no longer registers there),
    before B->A starts; a flow without registries has no such step."""
    if not mirrors_schemas(flow):
        return
    with run.step("registries" + (" (dry run)" if dry_run else "")):
        step = make_target_writable(flow, reverse_flow, dry_run=dry_run, say=run.say)
        if step.failed:
            run.mark_failed()


def _check(
    run: _Run, flow: Flow, control: FlowControl, reverse_flow: Flow | None, start_reverse: bool
) -> None:
    a, b = flow.source, flow.target
    state = control.state(a, b)
    if state is None:
        raise run.fail(f"the mirror runs no flow {a}->{b}")
    run.say(f"{a}->{b}: {state}")
    if reverse_flow is None:
        if start_reverse:
            raise run.fail(f"no flow {b}->{a} in the file to start (add `{b}->{a}.enabled = true`)")
        run.say(f"no flow {b}->{a} in the file: records written to {b} stay on {b}")
        return
    back = control.state(b, a)
    if start_reverse and (back is None or back == "DISABLED" or not reverse_flow.enabled):
        raise run.fail(
            f"the flow {b}->{a} is not enabled in the mirror: set "
            f"`{b}->{a}.enabled = true` (it can start paused) to start it"
        )
    policy = reverse_flow.replication_policy()
    run.say(
        f"{b}->{a}: {back or 'not in the mirror'}; {b}'s topics reach {a} as "
        f"{policy.format_remote_topic(b, '<topic>')!r}, {a}'s copies on {b} are not "
        f"sent back"
    )


def _with_members(
    admin: Callable[[], GroupAdmin], groups: Iterable[str], why: str
) -> dict[str, str]:
    """The groups that have members now, each with `why` after its member count and state."""
    names = sorted(set(groups))
    if not names:
        return {}
    states = admin().describe(names)
    return {g: f"{s.members} member(s) {why} ({s.state})" for g, s in states.items() if s.active}


def _reading_on_source(flow: Flow, groups: list[str], timeout: float) -> dict[str, str]:
    """Source groups that have members now, with why they will not be moved."""

    def admin() -> GroupAdmin:
        config = flow.source_admin_config(label="switchover-source-admin")
        return GroupAdmin(config, timeout=timeout)

    return {
        g: f"{why}; stop them, then run the switchover again"
        for g, why in _with_members(admin, groups, f"still consuming on {flow.source}").items()
    }


def _busy_groups(flow: Flow, plans: list[FailoverPlan], timeout: float) -> dict[str, str]:
    """Target groups that have members now, with why they will be left alone."""
    names = [p.committed_as for p in plans]
    busy = _with_members(lambda: target_group_admin(flow, timeout), names, f"on {flow.target}")
    return {g: f"{why}; stop them first" for g, why in busy.items()}


def _say_lag(run: _Run, lag: LagReport, moved: dict[tuple[str, int], int] | None) -> None:
    behind = sorted(lag.partitions, key=lambda p: -p.records)
    waiting = [p for p in behind if p.records]
    run.say(
        f"{len(lag.partitions)} partition(s), {lag.records} record(s) not copied yet"
        + (f", oldest {lag.seconds:.1f} s" if lag.records else "")
    )
    for p in waiting[:10]:
        run.say(
            f"  {p.topic}-{p.partition}: end {p.log_end}, copied to {p.position}, "
            f"{p.records} behind"
        )
    if len(waiting) > 10:
        run.say(f"  ... and {len(waiting) - 10} more")
    if moved:
        parts = ", ".join(f"{t}-{n} (+{d})" for (t, n), d in sorted(moved.items())[:5])
        run.say(f"the source still receives records: {parts}; stop its producers")
    for problem in lag.problems:
        run.say(f"  ! {problem}")


def _drain(
    run: _Run, read: Callable[[], LagReport], drain_timeout: float, poll_seconds: float
) -> LagReport:
    """Until two reads in a row show every partition copied and the same source ends."""
    deadline = time.monotonic() + drain_timeout
    last: dict[tuple[str, int], int] | None = None
    said_at = 0.0
    while True:
        lag = read()
        ends = {(p.topic, p.partition): p.log_end for p in lag.partitions}
        moved = (
            {}
            if last is None
            else {
                tp: end - last.get(tp, end) for tp, end in ends.items() if end != last.get(tp, end)
            }
        )
        if last is not None and not moved and not lag.records and not lag.problems:
            run.say(
                f"drained: {len(lag.partitions)} partition(s), every record copied, the "
                f"source's ends unchanged for {poll_seconds:g} s"
            )
            return lag
        now = time.monotonic()
        if now - said_at >= 5 * poll_seconds or last is None:
            _say_lag(run, lag, moved)
            said_at = now
        if now > deadline:
            run.report.lag = lag
            raise run.fail(
                f"not drained within {drain_timeout:.0f} s ({lag.records} record(s) "
                "not copied): nothing was changed"
            )
        last = ends
        time.sleep(poll_seconds)


def _move_groups(
    run: _Run, flow: Flow, reverse_flow: Flow | None, timeout: float
) -> list[GroupMove]:
    # Described before and after the commits are read: a group with members on A at either
    # moment may commit after its commits were read, so its translation would not be its last.
    before = _reading_on_source(flow, mirrored_groups(flow, timeout), timeout)
    plans = translate_all_groups(flow, reverse_flow=reverse_flow, timeout=timeout)
    if not plans:
        run.say("no consumer group to move")
        return []
    after = _reading_on_source(flow, [p.group for p in plans], timeout)
    admin = target_group_admin(flow, timeout)
    moves = []
    for plan in plans:
        reading = before.get(plan.group) or after.get(plan.group)
        if reading:
            moves.append(GroupMove(plan.group, plan.committed_as, skipped=reading))
            run.say(f"group {plan.group!r} not moved: {reading}")
            run.mark_failed()
            continue
        try:
            applied = apply_failover(plan, admin)
        except FailoverError as exc:
            moves.append(GroupMove(plan.group, plan.committed_as, skipped=str(exc)))
            run.say(f"group {plan.group!r} not moved: {exc}")
            continue
        move = GroupMove(
            plan.group,
            plan.committed_as,
            len(applied.committed),
            len(applied.kept),
            plan.exact,
            plan.rereads_at_most,
        )
        moves.append(move)
        run.say(
            f"group {plan.group!r}: {move.committed} partition(s) committed on "
            f"{flow.target} as {plan.committed_as!r}, {move.kept} kept (ahead)"
        )
    return moves


def _set_state(
    run: _Run,
    control: FlowControl,
    source: str,
    target: str,
    wanted: str,
    change: Callable[[str, str], None],
    settle_s: float = 60.0,
) -> None:
    before = control.state(source, target)
    if before == wanted or (wanted == "RUNNING" and before not in ("PAUSED", "STOPPED", None)):
        run.say(f"{source}->{target} is {before} already")
        return
    change(source, target)
    # A resumed flow starts its copy tasks (DEGRADED for a few seconds): it counts as resumed
    # once it is not PAUSED, and is waited for up to `settle_s` to show RUNNING.
    asked = time.monotonic()
    state = before
    while time.monotonic() < asked + 120:
        state = control.state(source, target)
        resumed = wanted == "RUNNING" and state not in ("PAUSED", "STOPPED", None)
        if state == wanted or (resumed and time.monotonic() > asked + settle_s):
            run.say(f"{source}->{target}: {before} -> {state}")
            return
        time.sleep(0.5)
    raise run.fail(f"{source}->{target} is {state}, not {wanted}, 120 s after asking")
