"""Switchovers run by the process for REST (`POST /flows/{a}/{b}/switchover`) and /ui.

One job per flow at a time, in a thread of its own: `mm2.client.switchover` with this
process's flows as its FlowControl. What the job has said so far, and its report once it ends,
are kept for `GET /flows/{a}/{b}/switchover` until the next one starts.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from mm2.client.switchover import switchover
from mm2.client.switchover_report import FlowControl, SwitchoverError, SwitchoverReport
from mm2.config import Flow
from mm2.errors import ConflictError, MM2Error, NotFoundError

__all__ = ["LocalFlows", "SwitchoverJob", "Switchovers"]


class _Flows(Protocol):
    """What a switchover needs of the process's flows (mm2.runtime.flow_admin.FlowAdmin)."""

    def state_of(self, source: str, target: str) -> str: ...
    def pause(self, source: str, target: str) -> None: ...
    def resume(self, source: str, target: str) -> None: ...


class LocalFlows:
    """FlowControl over this process's flows."""

    def __init__(self, flows: _Flows) -> None:
        self._flows = flows

    def state(self, source: str, target: str) -> str | None:
        try:
            return self._flows.state_of(source, target)
        except NotFoundError:
            return None

    def pause(self, source: str, target: str) -> None:
        self._flows.pause(source, target)

    def resume(self, source: str, target: str) -> None:
        self._flows.resume(source, target)


@dataclass
class SwitchoverJob:
    flow: str
    dry_run: bool
    start_reverse: bool
    started_ms: int
    said: list[str] = field(default_factory=list)
    finished_ms: int | None = None
    report: SwitchoverReport | None = None
    error: str = ""

    @property
    def running(self) -> bool:
        return self.finished_ms is None


Run = Callable[..., SwitchoverReport]


class Switchovers:
    """The switchover jobs of the process's flows; `run` is mm2.client.switchover's."""

    def __init__(
        self,
        flows: Callable[[str, str], tuple[Flow, Flow | None]],
        control: FlowControl,
        run: Run = switchover,
    ) -> None:
        self._flows = flows  # (flow, reverse flow or None) of a pair of aliases
        self._control = control
        self._run = run
        self._jobs: dict[str, SwitchoverJob] = {}
        self._lock = threading.Lock()

    def start(
        self,
        source: str,
        target: str,
        *,
        dry_run: bool,
        start_reverse: bool,
        drain_timeout: float,
        control: FlowControl | None = None,
    ) -> SwitchoverJob:
        """Start a job over `control` (the flows' state and changes; this process's own
        flows by default)."""
        flow, reverse = self._flows(source, target)  # NotFoundError for an unknown flow
        with self._lock:
            current = self._jobs.get(flow.name)
            if current is not None and current.running:
                raise ConflictError(
                    f"a switchover of {flow.name} is running since "
                    f"{current.started_ms} (GET its status)"
                )
            job = SwitchoverJob(flow.name, dry_run, start_reverse, int(time.time() * 1000))
            self._jobs[flow.name] = job
        thread = threading.Thread(
            target=self._work,
            args=(job, flow, reverse, drain_timeout, control or self._control),
            name=f"switchover-{flow.name}",
            daemon=True,
        )
        thread.start()
        return job

    def job(self, source: str, target: str) -> SwitchoverJob | None:
        flow, _ = self._flows(source, target)
        return self._jobs.get(flow.name)

    def _work(
        self,
        job: SwitchoverJob,
        flow: Flow,
        reverse: Flow | None,
        drain_timeout: float,
        control: FlowControl,
    ) -> None:
        try:
            job.report = self._run(
                flow,
                control,
                reverse_flow=reverse,
                dry_run=job.dry_run,
                start_reverse=job.start_reverse,
                drain_timeout=drain_timeout,
                say=job.said.append,
            )
        except SwitchoverError as exc:
            job.report, job.error = exc.report, str(exc)
        except MM2Error as exc:
            job.error = str(exc)
            job.said.append(f"stopped: {exc}")
        except Exception as exc:  # noqa: BLE001 - the job's answer, never a dead thread
            job.error = f"{type(exc).__name__}: {exc}"
            job.said.append(f"stopped: {job.error}")
        finally:
            job.finished_ms = int(time.time() * 1000)
