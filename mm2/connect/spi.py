"""What a connector author codes against: Connector and Task, with Kafka Connect's lifecycle.

A Connector turns its config into task configs; the runtime runs each Task on a thread of its
own, calling `poll()` again after the delay it returns. A Task raises an MM2Error whose
`retriable` is true to be retried with backoff; anything else fails it (state FAILED, trace kept).

    class Ticker(Task):
        def start(self, config, context): self.every = float(config["every.seconds"])
        def poll(self): print("tick"); return self.every
        def stop(self): pass
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Literal, Protocol

if TYPE_CHECKING:
    from mm2.copy.routes import Route
    from mm2.copy.stats import CopyStats

__all__ = [
    "Connector",
    "ConnectorType",
    "CopyTaskView",
    "LeaderEpoch",
    "Task",
    "TaskContext",
    "TaskLiveness",
    "TaskMetrics",
]

ConnectorType = Literal["source", "sink"]


@dataclass(frozen=True)
class LeaderEpoch:
    """The leadership a task's flow runs under when processes stand by for each other: the
    config topic on its target cluster and the epoch this process wrote there when elected
    ("" while it does not lead). A planner and its copy tasks check, before they start, that
    the topic's newest `leader` record is still of this epoch (Connect's KIP-618 task-count
    record plays this part)."""

    topic: str
    epoch: str


@dataclass(frozen=True)
class CopyTaskView:
    """A task that a Task runs elsewhere: its id, why it does not copy now (None: it copies),
    and its partitions (`topic-partition`)."""

    id: int
    waiting: str | None
    partitions: tuple[str, ...]


class TaskMetrics(Protocol):
    """What a task records of its flow (the worker's registry, mm2.runtime.metrics, serves it
    on /metrics and /flows)."""

    def set_routes(self, source: str, target: str, routes: Mapping[str, Route]) -> None: ...
    def lag_read_from_kafka(self, source: str, target: str) -> bool: ...
    def update_end_offsets(
        self, source: str, target: str, ends: Mapping[tuple[str, int], int]
    ) -> None: ...
    def record_batch(self, source: str, target: str, results: Iterable[CopyStats]) -> None: ...
    def set_owners(
        self, source: str, target: str, owners: Mapping[tuple[str, int], int]
    ) -> None: ...
    def topic_recreated(self, source: str, target: str, topic: str) -> None: ...
    def transactions_ended(self, source: str, target: str, partitions: Sequence[str]) -> None: ...
    def keep_checkpoint_groups(self, source: str, target: str, groups: Iterable[str]) -> None: ...
    def record_checkpoints(
        self, source: str, target: str, group: str, latencies: Mapping[tuple[str, int], float]
    ) -> None: ...
    def record_schema_pass(
        self, source: str, target: str, *, id_mode: str, registered: int, mappings: int
    ) -> None: ...


class TaskLiveness(Protocol):
    """Where a task records what the target acknowledged (mm2.runtime.liveness)."""

    def heartbeat(self, source: str, target: str, timestamp_s: float) -> None: ...
    def checkpoint_pass(self, source: str, target: str, timestamp_s: float) -> None: ...


class TaskContext(Protocol):
    """What the runtime tells a task about where it runs."""

    @property
    def flow(self) -> str: ...

    @property
    def connector(self) -> str: ...

    @property
    def task_id(self) -> int: ...

    @property
    def metrics(self) -> TaskMetrics:
        """Where the task records its replication figures (as Connect's KIP-877 hands a
        plugin its metrics); one per worker, read by /metrics and /flows."""

    @property
    def liveness(self) -> TaskLiveness:
        """Where the task records heartbeats and checkpoint passes the target acknowledged."""

    @property
    def leader_epoch(self) -> LeaderEpoch | None:
        """The leadership the task's flow runs under now (None: no election, one process)."""


class Task(ABC):
    """One unit of a connector's work, run by the runtime on its own thread."""

    @abstractmethod
    def start(self, config: Mapping[str, str], context: TaskContext) -> None:
        """Open clients and state; raise to fail the task."""

    @abstractmethod
    def poll(self) -> float:
        """Do one round of work and return the seconds to wait before the next round."""

    def pause(self) -> None:  # noqa: B027 - optional hook
        """Stop doing work until resume(); keep the positions. Default: poll() is not called."""

    def resume(self) -> None:  # noqa: B027 - optional hook
        """Carry on from where pause() left off."""

    @abstractmethod
    def stop(self) -> None:
        """Release everything; called once, also after a failure."""

    def status_note(self) -> str | None:
        """What the task's REST status says while it runs (its `trace` then: a running task
        has no error to show); None by default. MirrorSchemaTask says whether the flow keeps
        or translates schema IDs."""
        return None

    def copy_tasks(self) -> Sequence[CopyTaskView]:
        """The tasks this one runs elsewhere (MirrorSourceTask: the flow's copy tasks on
        Spark), which the Connect view shows in its place; none by default."""
        return ()


class Connector(ABC):
    """Turns its config into task configs; Apache's simple class name is its plugin name."""

    connector_type: ClassVar[ConnectorType] = "source"
    task_class: ClassVar[type[Task]]

    @abstractmethod
    def start(self, config: Mapping[str, str]) -> None:
        """Validate the config and prepare what the tasks will share."""

    @abstractmethod
    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        """One config per task to run now (none when the connector has nothing to do)."""

    def stop(self) -> None:  # noqa: B027 - optional hook
        """Release what start() made."""

    @classmethod
    def version(cls) -> str:
        from mm2 import __version__

        return __version__
