"""connect-mirror-maker on a real Spark standalone cluster, losing the worker that copies.

The cluster is started from the pyspark installation (`bin/spark-class` with the master and
two one-core workers). mm2 reaches the executors as docs/spark-cluster.md tells users to ship it: a
virtualenv holding mm2 and confluent-kafka, packed with tar and given as `spark.archives`, its
Python named by `spark.pyspark.python`. PySpark itself comes from the workers' Spark
installation. With `tasks.max = 1` one executor runs the copy task and the other has a free
core; the test kills the first worker and everything under it (kill -9: worker JVM, executor
JVM, Python workers), as when its machine dies, while a producer keeps writing. Spark runs the
copy task again on the other worker; a read_committed reader of the target must then see
every source record once, in order per partition. With `tasks.max = 2` both workers copy and
no core is left for Spark to run the lost task again: the driver sees one task slot fewer and
deals every partition to one copy task on the surviving worker.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path
from typing import Any

import psutil
import pyspark
import pytest
from confluent_kafka.cimpl import NewTopic

from mm2.localcluster import LocalCluster, LocalClusters
from tests.support.clusters import ClusterPair
from tests.support.kafka import admin_client, content, count, last_values, read_topic
from tests.support.mirror import ContinuousProducer, MirrorProcess, write_properties
from tests.support.waiting import eventually

pytestmark = [pytest.mark.integration, pytest.mark.slow]
log = logging.getLogger(__name__)

PARTITIONS = 3
SPARK_HOME = Path(pyspark.__file__).resolve().parent
REPO = Path(__file__).resolve().parents[2]
# What `pip install <checkout>` needs of the repository (the Dockerfile copies the same).
SOURCES = ("pyproject.toml", "README.md", "mm2")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# -- the executors' Python: mm2 in a packed virtualenv ------------------------------------------


def _run(args: list[str], what: str) -> None:
    done = subprocess.run(args, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, f"{what} failed ({done.returncode}):\n{done.stdout}{done.stderr}"


@pytest.fixture(scope="session")
def executor_archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The three steps of docs/spark-cluster.md: a virtualenv made with the driver's Python, mm2 and
    confluent-kafka installed into it without other dependencies, packed with tar. Made once
    per session, under the session's tmp dir."""
    work = tmp_path_factory.mktemp("executor-env")
    checkout = work / "mm2"
    checkout.mkdir()
    for name in SOURCES:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, checkout / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, checkout / name)
    env = work / "mm2-env"
    started = time.monotonic()
    _run([sys.executable, "-m", "venv", "--copies", str(env)], "making the virtualenv")
    kafka_client = f"confluent-kafka=={version('confluent-kafka')}"
    _run(
        [
            str(env / "bin" / "pip"),
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-deps",
            str(checkout),
            kafka_client,
        ],
        "installing mm2 into the virtualenv",
    )
    archive = work / "mm2-env.tar.gz"
    _run(["tar", "-czf", str(archive), "-C", str(env), "."], "packing the virtualenv")
    log.info(
        "executor archive: %.1f MB in %.1f s",
        archive.stat().st_size / 1e6,
        time.monotonic() - started,
    )
    return archive


# -- a Spark standalone cluster from the pyspark installation -----------------------------------


class SparkProcess:
    """A master or worker JVM (`bin/spark-class <class> ...`) in a process group of its own."""

    def __init__(self, name: str, args: list[str], directory: Path) -> None:
        self.name = name
        self.log_path = directory / f"{name}.log"
        self._log = self.log_path.open("wb")
        env = {
            k: v
            for k, v in os.environ.items()
            # Nothing of the test's Python may reach the executors: they use the archive's.
            if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "PYTHONPATH", "VIRTUAL_ENV")
        }
        env.update(
            SPARK_HOME=str(SPARK_HOME),
            SPARK_LOCAL_IP="127.0.0.1",
            SPARK_LOG_DIR=str(directory),
            SPARK_DAEMON_MEMORY="256m",
        )
        self.process = subprocess.Popen(
            [str(SPARK_HOME / "bin" / "spark-class"), *args],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )

    def tree(self) -> list[psutil.Process]:
        """The JVM and every process under it (executor JVMs, Python daemons and workers)."""
        try:
            root = psutil.Process(self.process.pid)
            return [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return []

    def kill(self) -> None:
        """kill -9 of the whole tree, as when the machine dies."""
        tree = self.tree()
        for proc in tree:
            with contextlib.suppress(psutil.NoSuchProcess):
                proc.send_signal(signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(30)
        psutil.wait_procs(tree, timeout=30)
        self._log.close()

    def log_tail(self, lines: int = 30) -> str:
        text = self.log_path.read_text(encoding="utf-8", errors="replace")
        return "\n".join(text.splitlines()[-lines:])


class SparkCluster:
    """A master and workers on the loopback address; JSON status from the master's web UI."""

    def __init__(self, directory: Path, workers: int) -> None:
        self.directory = directory
        self.port = free_port()
        self.ui_port = free_port()
        self.url = f"spark://127.0.0.1:{self.port}"
        master = [
            "org.apache.spark.deploy.master.Master",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--webui-port",
            str(self.ui_port),
        ]
        self.master = SparkProcess("master", master, directory)
        self.workers: list[SparkProcess] = []
        self.work_dirs: list[Path] = []
        for i in range(workers):
            work = directory / f"worker-{i}"
            work.mkdir()
            self.work_dirs.append(work)
            worker = [
                "org.apache.spark.deploy.worker.Worker",
                "--host",
                "127.0.0.1",
                "--cores",
                "1",
                "--memory",
                "1g",
                "--work-dir",
                str(work),
                "--webui-port",
                str(free_port()),
                self.url,
            ]
            self.workers.append(SparkProcess(f"worker-{i}", worker, directory))

    def status(self) -> dict[str, Any]:
        """The master's /json/ (workers with their states, applications); {} while it is
        not answering."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=10) as r:
                body: dict[str, Any] = json.load(r)
                return body
        except OSError:
            return {}

    def alive_workers(self) -> int:
        return int(self.status().get("aliveworkers", 0))

    def logs(self) -> str:
        procs = [self.master, *self.workers]
        return "\n".join(f"--- {p.name} ---\n{p.log_tail()}" for p in procs)

    def executor_logs(self, worker: int) -> str:
        """stderr of every executor the worker ran (`<work dir>/<app>/<executor>/stderr`)."""
        return "\n".join(
            path.read_text(encoding="utf-8", errors="replace")
            for path in sorted(self.work_dirs[worker].glob("*/*/stderr"))
        )

    def stop(self) -> None:
        for proc in [*self.workers, self.master]:
            proc.kill()


@pytest.fixture
def spark_cluster(tmp_path: Path) -> Iterator[SparkCluster]:
    """A master and two one-core workers, all killed afterwards, also when the test fails."""
    directory = tmp_path / "spark"
    directory.mkdir()
    cluster = SparkCluster(directory, workers=2)
    try:
        # A worker that does not come up is a failure of this test, never a skip.
        eventually(
            lambda: cluster.alive_workers() == 2,
            timeout=180,
            what="two Spark workers registered",
            log=cluster.logs,
        )
        yield cluster
    finally:
        cluster.stop()


# -- Kafka and the load -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def clusters(cluster_pair: ClusterPair) -> LocalClusters:
    return cluster_pair("sparkc-source", "sparkc-target")


def copying_workers(spark: SparkCluster, source: LocalCluster) -> list[int]:
    """The workers with a process connected to the source cluster: where a copy task runs
    (the idle executor never talks to Kafka)."""
    ports = {int(a.rsplit(":", 1)[1]) for a in source.bootstrap_servers.split(",")}
    found = []
    for i, worker in enumerate(spark.workers):
        for proc in worker.tree()[1:]:
            try:
                if any(c.raddr and c.raddr.port in ports for c in proc.net_connections("tcp")):
                    found.append(i)
                    break
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
    return found


def caught_up(source: LocalCluster, target: LocalCluster, topic: str) -> bool:
    want = last_values(source.bootstrap_servers, topic)
    return bool(want) and last_values(target.bootstrap_servers, f"primary.{topic}") == want


def assert_each_once_in_order(source: LocalCluster, target: LocalCluster, topic: str) -> int:
    """Per partition, read_committed: every source record on the target once, in order."""
    upstream = read_topic(source.bootstrap_servers, topic)
    committed = {"isolation.level": "read_committed"}
    downstream = read_topic(target.bootstrap_servers, f"primary.{topic}", **committed)
    assert sorted(downstream) == sorted(upstream), "partition counts differ"
    for p, records in upstream.items():
        want, got = content(records), content(downstream[p])
        missing = set(want) - set(got)
        assert not missing, f"partition {p}: {len(missing)} lost, e.g. {sorted(missing)[:3]}"
        assert len(got) == len(want), f"partition {p}: {len(got) - len(want)} duplicates"
        assert got == want, f"partition {p}: records reordered"
    return sum(len(r) for r in upstream.values())


# -- the test -----------------------------------------------------------------------------------


def per_partition(bootstrap: str, topic: str) -> dict[int, int]:
    return {p: len(records) for p, records in read_topic(bootstrap, topic).items()}


@pytest.mark.timeout(900)
@pytest.mark.parametrize("tasks_max", [1, 2])
def test_losing_the_copying_worker_moves_the_copy_task_and_keeps_each_record_once(
    clusters: LocalClusters,
    spark_cluster: SparkCluster,
    executor_archive: Path,
    tmp_path: Path,
    tasks_max: int,
) -> None:
    source, target = clusters["sparkc-source"], clusters["sparkc-target"]
    topic = f"spark-{uuid.uuid4().hex[:8]}"
    admin = admin_client(source.client_config())
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(60)
    remote = f"primary.{topic}"
    props = write_properties(
        tmp_path,
        source.bootstrap_servers,
        target.bootstrap_servers,
        topic,
        f"""tasks.max = {tasks_max}
spark.master = {spark_cluster.url}
spark.archives = {executor_archive}#environment
spark.pyspark.python = ./environment/bin/python
spark.executor.memory = 512m
spark.driver.host = 127.0.0.1
spark.driver.bindAddress = 127.0.0.1
""",
    )
    writer = ContinuousProducer(
        source,
        topic,
        rate=400,
        limit=1_000_000,
        seconds=3600,
        partitions=PARTITIONS,
        value=lambda i: f"v{i}".encode() * 8,
    ).start()
    try:
        with MirrorProcess(props) as mirror:

            def logs() -> str:
                return f"{mirror.log()}\n{spark_cluster.logs()}"

            eventually(
                lambda: count(target.bootstrap_servers, remote) > 1_500,
                timeout=300,
                what="records copied on the Spark cluster",
                log=logs,
            )
            copying: list[int] = []

            def every_copy_task_runs() -> bool:
                copying[:] = copying_workers(spark_cluster, source)
                return len(copying) == tasks_max

            eventually(
                every_copy_task_runs,
                timeout=180,
                what=f"{tasks_max} worker(s) running copy tasks",
                log=logs,
            )
            lost = copying[0]
            other = 1 - lost
            before = count(target.bootstrap_servers, remote)
            at_kill = per_partition(target.bootstrap_servers, remote)
            log_at_kill = len(mirror.log())
            spark_cluster.workers[lost].kill()
            log.info(
                "killed worker-%d (and its executor) with %d records on the target, %d produced",
                lost,
                before,
                writer.sent,
            )
            killed = time.monotonic()
            eventually(
                lambda: spark_cluster.alive_workers() == 1,
                timeout=180,
                what="the master to see the worker gone",
                log=logs,
            )
            gone = time.monotonic() - killed
            eventually(
                lambda: copying_workers(spark_cluster, source) == [other],
                timeout=300,
                what=f"the copy task running on worker-{other}",
                log=logs,
            )
            moved = time.monotonic() - killed
            eventually(
                lambda: count(target.bootstrap_servers, remote) > before + 2_000,
                timeout=300,
                what=f"records copied by worker-{other}",
                log=logs,
            )
            # every partition moves again, the lost task's too (its records were not in flight
            # on the surviving task before the kill when there were two)
            eventually(
                lambda: all(
                    n > at_kill.get(p, 0)
                    for p, n in per_partition(target.bootstrap_servers, remote).items()
                ),
                timeout=300,
                what="every partition copied after the kill",
                log=logs,
            )
            log.info(
                "the master saw worker-%d gone after %.1f s; worker-%d copied after %.1f s",
                lost,
                gone,
                other,
                moved,
            )
            writer.stop()
            writer.join()  # every record sent was delivered
            eventually(
                lambda: caught_up(source, target, topic), timeout=300, what="catch-up", log=logs
            )
            time.sleep(3)  # time enough to copy anything twice, if it would
            assert mirror.stop() == 0, mirror.log()[-3000:]
    finally:
        writer.stop()

    total = assert_each_once_in_order(source, target, topic)
    assert total == writer.sent

    if tasks_max == 1:
        # Spark ran the copy task again on the other worker, from the committed positions.
        executor_log = spark_cluster.executor_logs(other)
        resumed = [ln for ln in executor_log.splitlines() if "resumes from" in ln]
        assert resumed, f"no copy task resumed on worker-{other}:\n{executor_log[-3000:]}"
        log.info("worker-%d lost: %d records, each once; %s", lost, total, resumed[0])
    else:
        # No core was left to run the lost task again: the driver dealt its partitions anew.
        after_kill = mirror.log()[log_at_kill:]
        redealt = [ln for ln in after_kill.splitlines() if "started with 1 task(s)" in ln]
        assert redealt, f"no one-task epoch after the kill:\n{after_kill[-3000:]}"
        log.info("worker-%d lost: %d records, each once; %s", lost, total, redealt[0])
