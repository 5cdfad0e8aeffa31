"""The flows a switchover started over REST watches and changes, wherever they run.

A switchover job runs in the process that runs its flow (mm2.api.forward sends the request
there), but the flow back is run by the leader of the other cluster, and changes are carried
out by the leader that keeps REST changes. So the job reads each flow's state from the process
that runs it, and pauses or resumes through that writer, as an operator's REST calls would go:
a state this process only knows from afar (a flow it stands by for) is never taken as done.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

import httpx

from mm2.errors import ConflictError, NotFoundError
from mm2.runtime.naming import flow_name
from mm2.runtime.standby import Leader
from mm2.runtime.view import RuntimeView

__all__ = ["RoutedFlows"]

# A leader that does not answer a state read is asked again this many times, a second apart
# (an election moves it), before the switchover stops naming it.
STATE_TRIES = 5


class RoutedFlows:
    """mm2.client.switchover.FlowControl over the processes that run and change the flows.

    `headers` go with every request: the caller's credentials, and the forwarded mark that
    makes the other process answer itself."""

    def __init__(
        self, mirror: RuntimeView, headers: Mapping[str, str], timeout: float = 30.0
    ) -> None:
        self._mirror = mirror
        self._headers = dict(headers)
        self._timeout = timeout

    def state(self, source: str, target: str) -> str | None:
        leader = self._elsewhere(self._runner(flow_name(source, target)))
        if leader is None:
            try:
                return self._mirror.flows.view(source, target).state
            except NotFoundError:
                return None
        for _ in range(STATE_TRIES - 1):
            try:
                return self._remote_state(leader, source, target)
            except ConflictError:
                time.sleep(1.0)
        return self._remote_state(leader, source, target)

    def _remote_state(self, leader: Leader, source: str, target: str) -> str | None:
        answer = self._call("GET", leader, f"/flows/{source}/{target}", ok=(200, 404))
        return None if answer.status_code == 404 else str(answer.json()["state"])

    def pause(self, source: str, target: str) -> None:
        self._change(source, target, "pause", self._mirror.flows.pause)

    def resume(self, source: str, target: str) -> None:
        self._change(source, target, "resume", self._mirror.flows.resume)

    def _change(
        self, source: str, target: str, verb: str, here: Callable[[str, str], None]
    ) -> None:
        writer = self._elsewhere(self._mirror.leadership.writer())
        if writer is None:
            here(source, target)
        else:
            self._call("PUT", writer, f"/flows/{source}/{target}/{verb}", ok=(202,))

    def _runner(self, flow: str) -> Leader | None:
        return None if self._mirror.leadership.leads(flow) else self._mirror.leadership.runner(flow)

    def _elsewhere(self, leader: Leader | None) -> Leader | None:
        """`leader` when it is another process that can be asked, else None (this one)."""
        if leader is None or not leader.url or leader.url == self._mirror.url:
            return None
        return leader

    def _call(
        self, method: str, leader: Leader, path: str, *, ok: tuple[int, ...]
    ) -> httpx.Response:
        url = leader.url.rstrip("/") + path
        try:
            answer = httpx.request(method, url, headers=self._headers, timeout=self._timeout)
        except httpx.HTTPError as exc:
            raise ConflictError(
                f"the leader of {leader.cluster} ({leader.url}) did not answer {method} {path} "
                f"({exc})"
            ) from None
        if answer.status_code not in ok:
            raise ConflictError(
                f"the leader of {leader.cluster} ({leader.url}) answered "
                f"{method} {path} with {answer.status_code}: "
                f"{answer.text[:300]}"
            )
        return answer
