"""Several local clusters started side by side and stopped together (mm2.localcluster.cluster
starts each one)."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Self

from mm2.errors import BrokerStartError
from mm2.localcluster.cluster import LocalCluster, start_all, stop_all
from mm2.localcluster.jars import KAFKA_VERSION
from mm2.localcluster.java import DEFAULT_JVM_OPTIONS
from mm2.localcluster.process import Service

__all__ = ["LocalClusters"]


class LocalClusters(Service):
    """Named, independent local clusters started together; a context manager.

    >>> with LocalClusters(["primary", "backup"]) as clusters:  # doctest: +SKIP
    ...     clusters["primary"].bootstrap_servers
    """

    def __init__(
        self,
        names: Sequence[str],
        *,
        workdir: Path | str | None = None,
        broker_config: Mapping[str, str] | None = None,
        kafka_version: str = KAFKA_VERSION,
        start_timeout: float = 120.0,
        jvm_options: Sequence[str] = DEFAULT_JVM_OPTIONS,
    ) -> None:
        """`jvm_options` replace DEFAULT_JVM_OPTIONS for every broker (e.g. a larger heap for
        tens of thousands of partitions)."""
        if len(set(names)) != len(names) or not names:
            raise BrokerStartError(f"cluster names must be distinct and given: {list(names)}")
        base = None if workdir is None else Path(workdir)
        self._clusters = {
            name: LocalCluster(
                name,
                workdir=None if base is None else base / name,
                broker_config=broker_config,
                kafka_version=kafka_version,
                start_timeout=start_timeout,
                jvm_options=jvm_options,
            )
            for name in names
        }

    @classmethod
    def of(cls, clusters: Sequence[LocalCluster]) -> LocalClusters:
        """Clusters made one by one (each with its own listeners and settings, e.g. secured
        ones), to be started side by side and stopped together."""
        names = [c.name for c in clusters]
        if len(set(names)) != len(names) or not names:
            raise BrokerStartError(f"cluster names must be distinct and given: {names}")
        group = cls.__new__(cls)
        group._clusters = {c.name: c for c in clusters}
        return group

    def __getitem__(self, name: str) -> LocalCluster:
        return self._clusters[name]

    def __iter__(self) -> Iterator[LocalCluster]:
        return iter(self._clusters.values())

    def __len__(self) -> int:
        return len(self._clusters)

    def start(self) -> Self:
        started = time.monotonic()
        start_all(list(self))
        self.start_seconds = time.monotonic() - started
        return self

    def stop(self) -> None:
        stop_all(list(self))
