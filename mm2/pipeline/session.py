"""The process's Spark session: mm2's defaults, and every copy task a slot of its own."""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Mapping

from pyspark import SparkContext
from pyspark.sql import SparkSession

__all__ = ["default_master", "spark_context", "stop_spark"]

# Copy tasks hold a slot for as long as their epoch runs, and mostly wait on the network: in
# local mode, give at least this many slots whatever the core count.
LOCAL_SLOTS = 16


def default_master() -> str:
    return f"local[{max(os.cpu_count() or 1, LOCAL_SLOTS)}]"


_DEFAULTS = {
    "spark.app.name": "mm2",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.python.worker.reuse": "true",
    "spark.python.daemon.module": "mm2.pipeline.daemon",
    # A cancelled copy task's Python worker is killed this long after the cancel.
    "spark.python.task.killTimeout": "1s",
}

_lock = threading.Lock()


def _python_environment(settings: Mapping[str, str]) -> None:
    """The Python that Spark starts for copy tasks, and the address the driver binds to.

    PySpark takes the executors' Python from PYSPARK_PYTHON in the driver process (only
    spark-submit reads `spark.pyspark.python`, and mm2 is not started by it): the key wins,
    e.g. `./environment/bin/python` of a virtualenv shipped with `spark.archives`; without it,
    this process's own interpreter. A local master binds to the loopback address unless
    SPARK_LOCAL_IP says otherwise; a cluster's executors must reach the driver from other
    hosts, so there Spark's own choice (or `spark.driver.host`) stands.
    """
    python = settings.get("spark.pyspark.python", "").strip()
    if python:
        os.environ["PYSPARK_PYTHON"] = python
    else:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if settings.get("spark.master", "").strip().startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


def spark_context(conf: Mapping[str, str] | None = None) -> SparkContext:
    """The process's Spark context, made on first use with mm2's defaults under `conf`."""
    settings = {"spark.master": default_master(), **_DEFAULTS, **(conf or {})}
    with _lock:
        _python_environment(settings)
        builder = SparkSession.builder
        for key, value in settings.items():
            builder = builder.config(key, value)
        spark = builder.getOrCreate()
        spark.sparkContext.setLogLevel(os.environ.get("MM2_SPARK_LOG_LEVEL", "ERROR"))
        logging.getLogger("py4j").setLevel(logging.WARNING)
        return spark.sparkContext


def stop_spark() -> None:
    """Stop the process's Spark session, if one was made."""
    with _lock:
        active = SparkSession.getActiveSession()
        if active is not None:
            active.stop()
