"""The process's Spark session: mm2's defaults, and every copy task a slot of its own."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO

from pyspark import SparkConf, SparkContext
from pyspark.java_gateway import launch_gateway

from mm2.log.wire import WIRE_ENV, pump
from mm2.pipeline.class_archive import ClassArchive

__all__ = ["default_master", "spark_context", "spark_log_level", "spark_settings", "stop_spark"]

log = logging.getLogger(__name__)

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
# How long a stop gives executors to kill the tasks of the jobs it cancelled.
_KILL_GRACE_S = 1.0
# How long a stop waits for a Spark context being made before it stops without it.
_START_WAIT_S = 2.0


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


_LOG4J2 = Path(__file__).with_name("log4j2.properties")
_LOG4J_LEVELS = {
    logging.DEBUG: "DEBUG",
    logging.INFO: "INFO",
    logging.WARNING: "WARN",
    logging.ERROR: "ERROR",
    logging.CRITICAL: "FATAL",
}


def spark_log_level() -> str:
    """The JVM's log4j level: MM2_SPARK_LOG_LEVEL if set, else that of the Python logger
    `spark` (ERROR unless a logging configuration lowers it, mm2.log.setup)."""
    explicit = os.environ.get("MM2_SPARK_LOG_LEVEL", "").strip()
    if explicit:
        return explicit.upper()
    level = logging.getLogger("spark").getEffectiveLevel()
    return next((name for n, name in sorted(_LOG4J_LEVELS.items()) if level <= n), "FATAL")


def _log_settings(settings: dict[str, str]) -> None:
    """The driver JVM logs mm2.log.wire lines (mm2/pipeline/log4j2.properties), unless the
    operator's spark.driver.extraJavaOptions names a log4j configuration of their own."""
    options = settings.get("spark.driver.extraJavaOptions", "")
    if "log4j2.configurationFile" in options or "log4j.configurationFile" in options:
        return
    level = spark_log_level()
    ours = f"-Dlog4j2.configurationFile={_LOG4J2.as_uri()} -Dmm2.spark.log.level={level}"
    settings["spark.driver.extraJavaOptions"] = f"{options} {ours}".strip()


def _start_pumps(process: subprocess.Popen[bytes] | None) -> None:
    """Read the JVM's output (and, in local mode, its Python workers') into our logging."""
    if process is None:
        return
    streams: list[IO[bytes] | None] = [process.stdout, process.stderr]
    for name, stream in zip(("stdout", "stderr"), streams, strict=True):
        if stream is not None:
            thread = threading.Thread(target=pump, args=(stream,), name=f"spark-{name}")
            thread.daemon = True
            thread.start()


def _conf(settings: Mapping[str, str]) -> SparkConf:
    conf = SparkConf(loadDefaults=False)
    for key, value in settings.items():
        conf.set(key, value)
    return conf


def _launch(settings: Mapping[str, str]) -> None:
    """Start the JVM with its output piped to us, and make the context on it."""
    conf = _conf(settings)
    # The Python workers (children of the JVM in local mode) log wire lines too.
    os.environ[WIRE_ENV] = "1"
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
    gateway = launch_gateway(conf, popen_kwargs=pipes)  # type: ignore[no-untyped-call]
    _start_pumps(getattr(gateway, "proc", None))
    SparkContext(conf=conf, gateway=gateway)


def spark_settings(conf: Mapping[str, str] | None = None) -> dict[str, str]:
    """mm2's defaults under the operator's `spark.*` settings, with the driver JVM's log4j
    configuration added to their java options.

    The driver JVM keeps HotSpot's default JIT (C1 and C2). With C1 only
    (`-XX:TieredStopAtLevel=1`, which an operator can set in spark.driver.extraJavaOptions)
    the first record came 1 to 5 s sooner, but a steady flow cost about 7 % more CPU
    (docs/architecture.md, "Starting a flow")."""
    settings = {"spark.master": default_master(), **_DEFAULTS, **(conf or {})}
    _log_settings(settings)
    return settings


def spark_context(conf: Mapping[str, str] | None = None) -> SparkContext:
    """The process's Spark context, made on first use with mm2's defaults under `conf`."""
    settings = spark_settings(conf)
    with _lock:
        started = time.monotonic()
        fresh = SparkContext._active_spark_context is None
        if fresh:
            log.info("starting Spark (%s) ...", settings["spark.master"])
        _python_environment(settings)
        archive: ClassArchive | None = None
        if SparkContext._gateway is None:
            archive = ClassArchive()
            options = settings.get("spark.driver.extraJavaOptions", "")
            if extra := archive.java_options(options):
                settings["spark.driver.extraJavaOptions"] = f"{options} {extra}".strip()
            _launch(settings)
        # A context, not a SparkSession: copy tasks are plain RDD jobs, and making a session
        # (Spark SQL's shared state) took a second and a half more on two cores.
        sc = SparkContext.getOrCreate(_conf(settings))
        sc.setLogLevel(spark_log_level())
        if fresh:
            log.info(
                "Spark %s ready in %.1f s (%s, %d task slots)",
                sc.version,
                time.monotonic() - started,
                sc.master,
                sc.defaultParallelism,
            )
            threading.Thread(target=_warm_up, args=(sc,), name="spark-warm-up", daemon=True).start()
        if archive is not None:
            system = sc._jvm.System  # type: ignore[union-attr]
            archive.make_later(
                system.getProperty("java.home"), system.getProperty("java.class.path")
            )
        return sc


def _warm_up(sc: SparkContext) -> None:
    """One tiny job, so that Spark's Python worker daemon (mm2.pipeline.daemon, which imports
    the copy step) is up before the first copy task needs it: a standby that takes over, or a
    first epoch, then waits for neither. Failing costs nothing but that head start."""
    try:
        sc.parallelize([0], 1).map(_same).collect()
    except Exception as exc:  # noqa: BLE001 - Py4J and Spark errors alike: the head start only
        log.debug("Spark warm-up job failed: %s", exc)


def _same(value: int) -> int:
    return value


def _end_jobs(context: SparkContext) -> None:
    """Jobs still running cancelled, and a moment for their executors to kill the tasks: a
    copy task's Python worker the stopping context takes away under it is logged by Spark as a
    crash (an ERROR and a Java trace) on an ordinary stop."""
    if not context.statusTracker().getActiveJobsIds():
        return
    context.cancelAllJobs()
    time.sleep(_KILL_GRACE_S)


def stop_spark() -> None:
    """Stop the process's Spark context, if one was made. Quietly when Spark's JVM is gone
    already (a SIGTERM to the whole process group, as systemd and `timeout` send, reaches it
    at the same time as us). A context still being made is not waited for (on a loaded host
    that took 15 s): its JVM, if launched, is killed, and nothing else of it outlives us."""
    if not _lock.acquire(timeout=_START_WAIT_S):
        process = getattr(SparkContext._gateway, "proc", None)
        if process is not None and process.poll() is None:
            process.kill()
        log.info("Spark was still starting: not waited for")
        return
    try:
        _stop_context()
    finally:
        _lock.release()


def _stop_context() -> None:
    if SparkContext._active_spark_context is None:
        return
    process = getattr(SparkContext._gateway, "proc", None)
    if process is not None and process.poll() is not None:
        log.info("Spark's JVM has exited already (status %s)", process.returncode)
        return
    try:
        active = SparkContext._active_spark_context
        if active is not None:
            _end_jobs(active)
            active.stop()
    except Exception as exc:  # noqa: BLE001 - Py4J's errors when the JVM goes away
        log.info("Spark's JVM went away while stopping (%s)", type(exc).__name__)
