"""The Spark session of the process and one streaming query per flow, with its checkpoint."""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from mm2.kafka.copier import CopyResult
from mm2.pipeline.copy import RESULT_DDL, copy_function, results_from_table
from mm2.pipeline.source import WorkUnitSource
from mm2.pipeline.spec import PipelineSpec

__all__ = ["BatchHandler", "MirrorQuery", "spark_session", "stop_spark"]

log = logging.getLogger(__name__)

BatchHandler = Callable[[int, list[CopyResult]], None]

_DEFAULTS = {
    "spark.master": "local[*]",
    "spark.app.name": "mm2",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.sql.streaming.stopGracefullyOnShutdown": "false",
    "spark.python.worker.reuse": "true",
    "spark.python.daemon.module": "mm2.pipeline.daemon",
}

_lock = threading.Lock()


def spark_session(conf: Mapping[str, str] | None = None) -> SparkSession:
    """The process's Spark session, made on first use with mm2's defaults under `conf`."""
    with _lock:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        builder = SparkSession.builder
        for key, value in {**_DEFAULTS, **(conf or {})}.items():
            builder = builder.config(key, value)
        spark = builder.getOrCreate()
        spark.sparkContext.setLogLevel(os.environ.get("MM2_SPARK_LOG_LEVEL", "ERROR"))
        logging.getLogger("py4j").setLevel(logging.WARNING)
        spark.dataSource.register(WorkUnitSource)
        return spark


def stop_spark() -> None:
    """Stop the process's Spark session, if one was made."""
    with _lock:
        active = SparkSession.getActiveSession()
        if active is not None:
            active.stop()


class MirrorQuery:
    """One flow's streaming query: starts, stops (keeping its checkpoint) and reports batches."""

    def __init__(
        self,
        spark: SparkSession,
        spec: PipelineSpec,
        checkpoint_dir: Path,
        on_batch: BatchHandler,
        *,
        trigger_interval_ms: int = 250,
    ) -> None:
        self._spark = spark
        self._spec = spec
        self._checkpoint = checkpoint_dir
        self._on_batch = on_batch
        self._trigger_ms = trigger_interval_ms
        self._query: StreamingQuery | None = None
        self._idle = threading.Event()
        self._idle.set()

    @property
    def checkpoint_dir(self) -> Path:
        return self._checkpoint

    def start(self) -> None:
        spec_json = self._spec.to_json()
        copy = copy_function(spec_json)
        schema = RESULT_DDL
        on_batch = self._on_batch

        idle = self._idle
        flow = self._spec.flow

        def each_batch(df: DataFrame, batch_id: int) -> None:
            idle.clear()
            try:
                began = time.monotonic()
                table = df.mapInArrow(copy, schema).toArrow()
                copied = time.monotonic()
                on_batch(batch_id, results_from_table(table))
                log.debug(
                    "%s: batch %d copied in %.0f ms, handled in %.0f ms",
                    flow,
                    batch_id,
                    (copied - began) * 1000,
                    (time.monotonic() - copied) * 1000,
                )
            finally:
                idle.set()

        self._checkpoint.mkdir(parents=True, exist_ok=True)
        stream = self._spark.readStream.format(WorkUnitSource.name()).option("spec", spec_json)
        self._query = (
            stream.load()
            .writeStream.queryName(self._spec.flow)
            .foreachBatch(each_batch)
            .option("checkpointLocation", str(self._checkpoint))
            .trigger(processingTime=f"{self._trigger_ms} milliseconds")
            .start()
        )
        log.info("%s: pipeline started, checkpoint %s", self._spec.flow, self._checkpoint)

    def stop(self, drain_timeout: float = 60.0) -> None:
        """Stop after the running batch; the checkpoint keeps the positions for the next start.

        A batch still running after drain_timeout is cancelled: it was not committed, so the
        next start copies it again (at-least-once).
        """
        if self._query is not None:
            if not self._idle.wait(drain_timeout):
                log.warning(
                    "%s: stopping mid-batch; it is copied again on restart", self._spec.flow
                )
            self._query.stop()
            self._query = None

    @property
    def running(self) -> bool:
        return self._query is not None and self._query.isActive

    def failure(self) -> str | None:
        """The error that ended the query, if it ended with one."""
        if self._query is None:
            return None
        exc = self._query.exception()
        return None if exc is None else str(exc)
