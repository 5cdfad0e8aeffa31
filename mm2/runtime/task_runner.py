"""Runs one Task on its own thread: start, poll loop, pause/resume, retry and restart, stop.

A task heals itself: a poll that fails with a retriable error is polled again after a capped
exponential backoff; a start that fails, or a poll that fails with anything else, stops the
task and starts a fresh instance after another capped backoff. Only an operator's error (bad
credentials, an ACL, a configuration, a record too large) leaves the task FAILED until a
person restarts it.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from mm2.connect.spi import LeaderEpoch, Task
from mm2.errors import MM2Error
from mm2.runtime.liveness import Liveness
from mm2.runtime.metrics import MetricsRegistry
from mm2.runtime.status import State, TaskStatus

__all__ = ["STOP_TIMEOUT_S", "Backoff", "TaskRunner"]

log = logging.getLogger(__name__)

# How long stop() waits for a task's thread: a clean stop of the process (10 s at most, REST
# and Spark included) must stay short even with brokers down. The task's own stop() bounds its
# flushes below this; a thread stuck in a call to a cluster that is down is left behind.
STOP_TIMEOUT_S = 6.0


@dataclass(frozen=True)
class Backoff:
    """Delays after failures, each doubled up to its maximum: `initial_s`/`maximum_s` between
    polls that failed with a retriable error, `restart_*` between restarts of a failed task."""

    initial_s: float = 0.5
    maximum_s: float = 30.0
    restart_initial_s: float = 1.0
    restart_maximum_s: float = 60.0


@dataclass(frozen=True)
class _Context:
    flow: str
    connector: str
    task_id: int
    metrics: MetricsRegistry
    liveness: Liveness
    epoch_of: Callable[[], LeaderEpoch | None]

    @property
    def leader_epoch(self) -> LeaderEpoch | None:
        return self.epoch_of()


def _waiting_trace(exc: BaseException, what: str, delay: float) -> str:
    """The status trace while a task waits: what happens when, then the error's traceback."""
    at = datetime.now().astimezone() + timedelta(seconds=delay)
    when = at.isoformat(timespec="seconds")
    return f"{what} in {delay:.3g} s (at {when}) after:\n" + "".join(
        traceback.format_exception(exc)
    )


def _why(waiting: str | None, retrying: str | None) -> str | None:
    """A waiting copy task's trace: why it waits, then what its planner is retrying (last, so
    that the flow's cause, the trace's last line, names the error that holds it back)."""
    if waiting is None or retrying is None:
        return waiting
    return f"{waiting}\n{retrying}"


@dataclass(frozen=True)
class _Shown:
    """What a task's status shows, replaced as a whole."""

    state: State
    trace: str | None
    restarts: int


def copy_state(own: State, waiting: str | None) -> State:
    """A copy task's state in the Connect view: its planner's, unless the planner runs; then
    RUNNING once the copy task copies and UNASSIGNED until then (or between two epochs)."""
    if own != "RUNNING":
        return own
    return "RUNNING" if waiting is None else "UNASSIGNED"


class TaskRunner:
    """A task and the thread that runs it; every state change is visible through status().

    The task is started again as a fresh instance of its class after a failure, so task
    classes must be constructible without arguments (as Connect's are).
    """

    def __init__(
        self,
        task: Task,
        config: Mapping[str, str],
        *,
        flow: str,
        connector: str,
        task_id: int,
        worker_id: str,
        paused: bool = False,
        backoff: Backoff | None = None,
        after: Sequence[TaskRunner] = (),
        metrics: MetricsRegistry | None = None,
        liveness: Liveness | None = None,
        leader_epoch: Callable[[], LeaderEpoch | None] = lambda: None,
    ) -> None:
        """`after`: earlier runners of the same task that did not stop in time; this one
        starts its task only once they have ended, so two instances never run at once.
        `metrics` and `liveness` reach the task through its context (without them, as in
        tests, it records into registries of its own that nobody reads)."""
        self._after = [r for r in after if r.alive]
        self._task = task
        self._config = dict(config)
        self._context = _Context(
            flow,
            connector,
            task_id,
            metrics or MetricsRegistry(),
            liveness or Liveness(),
            leader_epoch,
        )
        self._worker_id = worker_id
        self._backoff = backoff or Backoff()
        # State, trace and restarts change together, by the runner's thread alone, and are read
        # as one: a status never shows RESTARTING without its trace, or FAILED without why.
        self._shown = _Shown("UNASSIGNED", None, 0)
        self._want_paused = paused
        self._stopping = threading.Event()
        self._wake = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"{flow}|{connector}-{task_id}", daemon=True
        )

    @property
    def config(self) -> dict[str, str]:
        return dict(self._config)

    @property
    def task_id(self) -> int:
        return self._context.task_id

    @property
    def restarts(self) -> int:
        """How often the runner started the task again after a failure."""
        return self._shown.restarts

    def status(self) -> TaskStatus:
        shown = self._shown
        trace = shown.trace
        if trace is None and shown.state == "RUNNING":
            try:
                trace = self._task.status_note()
            except Exception:  # a view never fails the status call
                log.debug("%s: status note not readable", self._thread.name, exc_info=True)
        return TaskStatus(
            self._context.task_id, shown.state, self._worker_id, trace, shown.restarts
        )

    def statuses(self) -> tuple[TaskStatus, ...]:
        """What the Connect view shows of this task: the copy tasks it runs elsewhere, when it
        runs any, each RUNNING only while this task runs and the copy task copies (UNASSIGNED
        with the reason otherwise, this task's state and trace while it does not run); else
        this task itself."""
        own = self.status()
        try:
            copies = self._task.copy_tasks()
        except Exception:  # a view never fails the status call
            log.debug("%s: copy tasks not readable", self._thread.name, exc_info=True)
            copies = ()
        if not copies:
            return (own,)
        return tuple(
            dataclasses.replace(
                own,
                id=copy.id,
                state=copy_state(own.state, copy.waiting),
                trace=own.trace if own.state != "RUNNING" else _why(copy.waiting, own.trace),
                partitions=copy.partitions,
            )
            for copy in copies
        )

    def start(self) -> None:
        self._thread.start()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def pause(self) -> None:
        self._want_paused = True
        self._wake.set()

    def resume(self) -> None:
        self._want_paused = False
        self._wake.set()

    def signal_stop(self) -> None:
        """Ask the task to stop without waiting (join() or stop() waits)."""
        self._stopping.set()
        self._wake.set()

    def join(self, timeout: float = STOP_TIMEOUT_S) -> None:
        """Wait up to `timeout` for the thread; a task stuck in a call to a cluster that does
        not answer is left to finish on its own (the thread is a daemon)."""
        if self._thread.is_alive():
            self._thread.join(max(0.0, timeout))
            if self._thread.is_alive():
                log.warning("%s did not stop within %.0f s", self._thread.name, timeout)

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> None:
        """Ask the task to stop and wait for its thread (the task finishes its current round)."""
        self.signal_stop()
        self.join(timeout)

    def _fail(self, exc: BaseException) -> None:
        self._show("FAILED", "".join(traceback.format_exception(exc)))
        log.error("%s failed for good (an operator must act): %s", self._thread.name, exc)

    def _run(self) -> None:
        for earlier in self._after:
            while earlier.alive and not self._stopping.is_set():
                self._show("UNASSIGNED", "waiting for the previous instance to stop")
                earlier._thread.join(0.5)
        self._after = []
        delay = self._backoff.restart_initial_s
        while not self._stopping.is_set():
            began = time.monotonic()
            failure = self._run_once()
            if failure is None or self._stopping.is_set():
                return
            if isinstance(failure, MM2Error) and failure.operator:
                self._fail(failure)
                return
            if time.monotonic() - began >= self._backoff.restart_maximum_s:
                delay = self._backoff.restart_initial_s  # it ran well for a while: start over
            self._show("RESTARTING", _waiting_trace(failure, "restarting", delay))
            log.warning(
                "%s failed (%s); restarting it in %.3g s", self._thread.name, failure, delay
            )
            self._sleep(delay, until_stop=True)
            if self._stopping.is_set():
                return
            delay = min(delay * 2, self._backoff.restart_maximum_s)
            self._shown = dataclasses.replace(self._shown, restarts=self._shown.restarts + 1)
            self._task = type(self._task)()

    def _run_once(self) -> BaseException | None:
        """Start, poll until stopped or failed, stop: the failure, or None when asked to stop."""
        try:
            self._task.start(self._config, self._context)
        except Exception as exc:  # noqa: BLE001 - a task's failure must never take the worker down
            self._stop_task()
            return exc
        failure = self._loop()
        self._stop_task()
        return failure

    def _loop(self) -> BaseException | None:
        delay = self._backoff.initial_s
        paused = False
        self._show("RUNNING", None)
        while not self._stopping.is_set():
            if self._want_paused != paused:
                paused = self._want_paused
                try:
                    (self._task.pause if paused else self._task.resume)()
                except Exception as exc:  # noqa: BLE001 - restarted like any other failure
                    return exc
                self._show("PAUSED" if paused else "RUNNING", self._shown.trace)
            if paused:
                self._sleep(None)
                continue
            try:
                wait = self._task.poll()
                delay = self._backoff.initial_s
                if self._shown.trace is not None:
                    self._show(self._shown.state, None)
            except MM2Error as exc:
                if not exc.retriable:
                    return exc
                self._show(self._shown.state, _waiting_trace(exc, "polling again", delay))
                log.warning("%s: %s; retrying in %.3g s", self._thread.name, exc, delay)
                wait, delay = delay, min(delay * 2, self._backoff.maximum_s)
            except Exception as exc:  # noqa: BLE001 - restarted, or FAILED with its trace
                return exc
            self._sleep(wait)
        return None

    def _show(self, state: State, trace: str | None) -> None:
        self._shown = _Shown(state, trace, self._shown.restarts)

    def _sleep(self, seconds: float | None, *, until_stop: bool = False) -> None:
        """Wait `seconds` (None: until woken); pause/resume wakes it early unless `until_stop`."""
        if not until_stop:
            self._wake.wait(seconds)
            self._wake.clear()
            return
        self._stopping.wait(seconds)

    def _stop_task(self) -> None:
        try:
            self._task.stop()
        except Exception:
            log.exception("%s: error while stopping", self._thread.name)
