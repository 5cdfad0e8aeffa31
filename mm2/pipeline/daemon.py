"""Spark's Python worker daemon, with the copy step imported before it forks any worker.

Spark forks a Python worker per concurrent task; each new worker would otherwise import
confluent-kafka and mm2 on its first task, holding up the copy task that
needed it. Set as `spark.python.daemon.module`.
"""

from __future__ import annotations

from pyspark.daemon import manager

import mm2.kafka.stream_copier  # noqa: F401  (imported once, shared by every forked worker)

if __name__ == "__main__":
    manager()
