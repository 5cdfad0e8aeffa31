"""Leaders and standbys: which process runs each target cluster's flows, and REST changes in
Kafka so that every process sees the same flows.

Every process with the same mm2.properties joins one election per target cluster (see
mm2.kafka.config_topic). The leader of a cluster runs the herders of the flows into it; the
herders of other flows stay built but idle, so a standby answers reads and starts them the
moment it is elected. The leader of the *home* cluster (`mm2.configs.cluster`, by default the
target of the file's first flow) is the one writer of the REST changes: every process reads
them from the home cluster's config topic, applies them, and keeps a copy in mm2.state.dir
only as a cache for a start while that cluster is unreachable.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from mm2.config.model import Flow
from mm2.errors import ConflictError, KafkaClientError, ProducerFencedError
from mm2.runtime.changes import Changes
from mm2.runtime.leader_probe import LeaderProbe
from mm2.runtime.secrets import SecretBox, open_changes, seal_changes

__all__ = ["Coordinator", "Leader"]

log = logging.getLogger(__name__)

LEADER_KEY = "leader"
PROBE_INTERVAL_S = 1.0
CHANGES_KEY = "rest-changes"


class ConfigLog(Protocol):
    alias: str
    topic: str

    def write(self, key: str, value: dict[str, Any] | None, *, timeout: float = ...) -> None: ...
    def follow(
        self,
        on_record: Callable[[str, dict[str, Any] | None], None],
        stopping: threading.Event,
        on_end: Callable[[], None] = ...,
    ) -> threading.Thread: ...
    def close(self) -> None: ...


class Election(Protocol):
    leader: bool

    def start(self) -> None: ...
    def stop(self, timeout: float = ...) -> None: ...
    def rejoin(self) -> None: ...


ElectionFactory = Callable[[str, Callable[[bool], None]], Election]


@dataclass(frozen=True)
class Leader:
    """The process that leads a target cluster's flows: its REST URL and worker id."""

    cluster: str
    url: str
    worker_id: str
    this_worker: bool = False
    # A new one at each election (mm2.connect.spi.LeaderEpoch): what the copy tasks check.
    epoch: str = ""


class Coordinator:
    """Elections for the target clusters, the leaders they chose, and the REST changes."""

    def __init__(
        self,
        *,
        worker_id: str,
        url: str,
        home: str,
        logs: Callable[[Flow], ConfigLog],
        elect: ElectionFactory,
        box: SecretBox,
        probe: LeaderProbe | None = None,
    ) -> None:
        """`logs(flow)` makes the config topic client of the flow's target cluster; with a
        `probe`, a standby takes over from a leader whose process is gone without waiting for
        its session to end (mm2.runtime.leader_probe)."""
        self.worker_id = worker_id
        self.url = url
        self.home = home
        self._make_log = logs
        self._logs: dict[str, ConfigLog] = {}
        self._elect = elect
        self._box = box
        self._lock = threading.Lock()
        self._leaders: dict[str, Leader] = {}
        self._epochs: dict[str, str] = {}  # cluster -> the epoch this process leads it in
        # Clusters this process took over from a gone leader, before the group gave it the lead.
        self._acting: set[str] = set()
        # Clusters whose config topic showed this process's epoch: a later leader record there
        # is a newer leader's, and this process steps down.
        self._own_seen: set[str] = set()
        self._probe = probe
        self._elections: dict[str, Election] = {}
        self._stopping = threading.Event()
        self._version = 0
        self._changes: Changes | None = None
        self._caught_up = threading.Event()
        self._electing = False
        self.on_changes: Callable[[Changes], None] = lambda _c: None
        self.on_lead: Callable[[str, bool], None] = lambda _c, _l: None

    # -- reading --
    def watch(self, flow: Flow) -> None:
        """Follow the config topic of the flow's target cluster (created if missing, by the
        reading thread), and join its election once elections have started."""
        alias = flow.target
        with self._lock:
            if alias in self._logs:
                return
            config_log = self._logs[alias] = self._make_log(flow)
        on_end = self._caught_up.set if alias == self.home else (lambda: None)
        config_log.follow(functools.partial(self._record, alias), self._stopping, on_end)
        if self._electing:
            self._join(alias)

    def changes(self) -> Changes | None:
        with self._lock:
            return self._changes

    def initial_changes(
        self, timeout: float, stopping: threading.Event | None = None
    ) -> Changes | None:
        """The REST changes stored on the home cluster, once read (None: nothing stored, or
        the home cluster did not answer within `timeout`, or `stopping` was set first)."""
        deadline = time.monotonic() + timeout
        while not self._caught_up.wait(min(0.2, max(0.0, deadline - time.monotonic()))):
            if stopping is not None and stopping.is_set():
                return None
            if time.monotonic() >= deadline:
                break
        if not self._caught_up.is_set():
            log.warning(
                "the REST changes on %s were not read within %.0f s; starting from the copy in "
                "mm2.state.dir",
                self.home,
                timeout,
            )
        with self._lock:
            return self._changes

    def _record(self, alias: str, key: str, value: dict[str, Any] | None) -> None:
        if key == LEADER_KEY and value is not None:
            leader = Leader(
                alias,
                str(value.get("url", "")),
                str(value.get("worker_id", "")),
                epoch=str(value.get("epoch", "")),
            )
            with self._lock:
                self._leaders[alias] = leader
                mine = self._epochs.get(alias)
                if mine is not None and leader.epoch == mine:
                    self._own_seen.add(alias)
                newer = mine is not None and alias in self._own_seen and leader.epoch != mine
            if newer:
                self._step_down(alias, leader)
            return
        if alias != self.home or key != CHANGES_KEY or value is None:
            return
        try:
            version = int(value.get("version", 0))
            changes = open_changes(value.get("changes", {}), self._box)
        except (ValueError, TypeError) as exc:  # a ConfigError (another key) included
            log.error("REST changes in %s on %s not applied: %s", CHANGES_KEY, alias, exc)
            return
        with self._lock:
            if version <= self._version:
                return  # written by this process, or older
            self._version = version
            self._changes = changes
            started = self._caught_up.is_set()
        if started:
            log.info("REST changes version %d from %s applied", version, value.get("writer"))
            self.on_changes(changes)

    # -- elections --
    def start_elections(self) -> None:
        self._electing = True
        with self._lock:
            aliases = list(self._logs)
        for alias in aliases:
            self._join(alias)
        if self._probe is not None:
            threading.Thread(target=self._probe_leaders, name="leader-probe", daemon=True).start()

    def _join(self, alias: str) -> None:
        with self._lock:
            if alias in self._elections or alias not in self._logs:
                return
            election = self._elections[alias] = self._elect(
                alias, functools.partial(self._leading, alias)
            )
        election.start()

    def _leading(self, alias: str, leads: bool) -> None:
        """The group elected (or deposed) this process for `alias`."""
        with self._lock:
            took_over = leads and alias in self._acting
            self._acting.discard(alias)
        if took_over:
            return  # it leads since it took over: same epoch, flows running
        if not leads:
            with self._lock:
                self._epochs.pop(alias, None)
                self._own_seen.discard(alias)
        self._begin(alias, leads)

    def _begin(self, alias: str, leads: bool) -> None:
        if leads:
            epoch = uuid.uuid4().hex[:16]
            me = Leader(alias, self.url, self.worker_id, this_worker=True, epoch=epoch)
            with self._lock:
                self._leaders[alias] = me
                self._epochs[alias] = epoch
                self._own_seen.discard(alias)
            if not self._announce(alias, epoch):
                threading.Thread(
                    target=self._announce_until,
                    args=(alias, epoch),
                    name=f"announce-{alias}",
                    daemon=True,
                ).start()
        self.on_lead(alias, leads)

    # -- taking over from a gone leader, stepping down for a newer one --
    def _probe_leaders(self) -> None:
        probe = self._probe
        assert probe is not None
        while not self._stopping.wait(PROBE_INTERVAL_S):
            led: dict[str, list[Leader]] = {}  # another process's URL -> what it leads
            for alias in list(self._logs):
                with self._lock:
                    known = self._leaders.get(alias)
                if self.leads(alias) or known is None or known.url in ("", self.url):
                    continue
                led.setdefault(known.url, []).append(known)
            # One probe per process, and every cluster it led taken over together: one leader
            # often leads several clusters (the flows' targets), and a gone process must be
            # seen accepting again before it can be found gone again.
            for url, lost in led.items():
                if probe.gone(url):
                    probe.forget(url)
                    for known in lost:
                        self._take_over(known.cluster, known)

    def _take_over(self, alias: str, gone: Leader) -> None:
        log.warning(
            "leader %s of %s refuses connections at %s: its process is gone; taking its flows "
            "over now instead of when its session in group mm2-leader.%s times out",
            gone.worker_id,
            alias,
            gone.url,
            alias,
        )
        with self._lock:
            self._acting.add(alias)
        self._begin(alias, True)

    def _step_down(self, alias: str, newer: Leader) -> None:
        """Another process wrote a leader epoch after this one's: it leads now."""
        log.warning(
            "%s leads %s now (epoch %s, written after this process's): stepping down",
            newer.worker_id or newer.url,
            alias,
            newer.epoch,
        )
        with self._lock:
            acting = alias in self._acting
            self._acting.discard(alias)
            self._epochs.pop(alias, None)
            self._own_seen.discard(alias)
            election = self._elections.get(alias)
        if election is not None and election.leader:
            election.rejoin()  # its seat in the group goes to another member
        elif acting:
            self.on_lead(alias, False)

    def _announce(self, alias: str, epoch: str) -> bool:
        """Write the `leader` record of this epoch (transactional: it fences the config topic
        writes of a deposed leader); the copy tasks of this epoch check it before they start."""
        since = int(time.time() * 1000)
        record = {"url": self.url, "worker_id": self.worker_id, "since_ms": since, "epoch": epoch}
        for attempt in (1, 2):  # a writer fenced by a leader since is replaced at once
            try:
                self._logs[alias].write(LEADER_KEY, record)
                return True
            except ProducerFencedError as exc:
                if attempt == 2:
                    log.warning("could not announce leadership of %s: %s; trying again", alias, exc)
                    return False
            except KafkaClientError as exc:
                log.warning("could not announce leadership of %s: %s; trying again", alias, exc)
                return False
        return False

    def _announce_until(self, alias: str, epoch: str) -> None:
        """Until written: meanwhile the flows' copy tasks refuse to start (not announced)."""
        while not self._stopping.wait(2.0):
            if self.leader_epoch(alias) != epoch or self._announce(alias, epoch):
                return

    def leader_epoch(self, alias: str) -> str | None:
        """The epoch in which this process leads `alias` (None: it does not lead it)."""
        if not self.leads(alias):
            return None
        with self._lock:
            return self._epochs.get(alias)

    def config_topic(self, alias: str) -> str:
        return self._logs[alias].topic

    def leads(self, alias: str) -> bool:
        with self._lock:
            election = self._elections.get(alias)
            acting = alias in self._acting
        return acting or (election is not None and election.leader)

    def leader(self, alias: str) -> Leader | None:
        """This process when it leads `alias`, else the last leader announced (None: none yet)."""
        if self.leads(alias):
            return Leader(alias, self.url, self.worker_id, this_worker=True)
        with self._lock:
            known = self._leaders.get(alias)
        if known is None or known.url == self.url:
            return None
        return known

    def leaders(self) -> dict[str, Leader | None]:
        return {alias: self.leader(alias) for alias in sorted(self._logs)}

    # -- writing --
    def publish(self, changes: Changes) -> None:
        """Write the REST changes to the home cluster (this process must lead it)."""
        if not self.leads(self.home):
            raise ConflictError(
                f"this worker does not lead {self.home}, where REST changes are kept; "
                "send the request to the leader"
            )
        body = seal_changes(changes, self._box)
        with self._lock:
            # Taken before the write, so that its echo from the topic is known as ours.
            self._version += 1
            version = self._version
        self._logs[self.home].write(
            CHANGES_KEY, {"version": version, "writer": self.url, "changes": body}
        )
        with self._lock:
            self._changes = changes

    @property
    def has_stored_changes(self) -> bool:
        with self._lock:
            return self._version > 0

    def stop(self) -> None:
        with self._lock:
            elections = list(self._elections.values())
        for election in elections:
            election.stop()
        self._stopping.set()
        for config_log in self._logs.values():
            config_log.close()
