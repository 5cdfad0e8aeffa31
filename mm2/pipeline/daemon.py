"""Spark's Python worker daemon, with the copy step imported before it forks any worker.

Spark forks a Python worker per concurrent task; each new worker would otherwise import
confluent-kafka and mm2 on its first task, holding up the copy task that
needed it. Set as `spark.python.daemon.module`. Its logging is set up here too, before the
fork, so every worker inherits it (mm2.log.wire).

What the imports made is frozen before the first fork (`gc.freeze`): the collector of each
forked worker then never walks those objects, so the pages that hold them stay shared with the
daemon instead of being copied into every worker (copy-on-write).
"""

from __future__ import annotations

import gc
from collections.abc import Callable

from pyspark.daemon import manager

import mm2.copy.task  # noqa: F401  (imported once, shared by every forked worker)
from mm2.log.wire import configure_child

# Started by connect-mirror-maker in local mode: log wire lines, which it logs as its own.
configure_child()


def main(serve: Callable[[], None] = manager) -> None:
    """Freeze what is imported, then serve Spark's requests for workers (forking each)."""
    gc.collect()
    gc.freeze()
    serve()


if __name__ == "__main__":
    main()
