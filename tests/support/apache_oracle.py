"""Apache Kafka's own classes as an oracle: oracle/ApacheOracle.java, compiled against the
benchmark's Apache jars and run once per test session, answers what Apache's ConfigDefs make of
a value, whether its clients accept a bootstrap list, how its DefaultReplicationPolicy names
topics, and what MirrorMakerConfig makes of a whole mm2.properties map. Jars that cannot be
resolved fail the test (a comparison without Apache proves nothing).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from bench.apache import resolve_apache_mm2
from mm2.errors import MM2Error
from mm2.localcluster import find_java

SOURCE = Path(__file__).parent / "oracle" / "ApacheOracle.java"


class ApacheOracle:
    """One JVM answering one JSON request per line."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self._process = process

    def ask(self, *request: object) -> dict[str, Any]:
        assert self._process.stdin is not None and self._process.stdout is not None
        self._process.stdin.write(json.dumps(list(request)) + "\n")
        self._process.stdin.flush()
        line = self._process.stdout.readline()
        if not line:
            raise AssertionError(f"the Apache oracle ended (exit {self._process.poll()})")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def value(self, definitions: str, key: str, value: str) -> dict[str, Any]:
        """`definitions`: producer, consumer, admin, source, checkpoint, heartbeat or mm."""
        return self.ask("value", definitions, key, value)

    def bootstrap_ok(self, value: str) -> bool:
        return bool(self.ask("bootstrap", value)["ok"])

    def policy(self, settings: Mapping[str, str], topic: str) -> dict[str, Any]:
        return self.ask("policy", dict(settings), topic)

    def resolution(self, props: Mapping[str, str], source: str, target: str) -> dict[str, Any]:
        """MirrorMakerConfig for herder source->target: `connectors` (simple class name -> its
        connectorBaseConfig), `worker` (workerConfig) and `pairs` (clusterPairs, "s->t")."""
        return self.ask("resolution", dict(props), source, target)


@pytest.fixture(scope="session")
def apache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApacheOracle]:
    try:
        jars = resolve_apache_mm2()
        java = Path(find_java().executable)
    except MM2Error as exc:
        pytest.fail(f"the Apache oracle needs Java 17 and Apache's jars: {exc}", pytrace=False)
    javac = java.with_name("javac")
    if not javac.exists():
        javac = Path(shutil.which("javac") or "javac")
    classpath = os.pathsep.join(str(j) for j in jars.classpath)
    out = tmp_path_factory.mktemp("oracle")
    subprocess.run(
        [str(javac), "-nowarn", "-cp", classpath, "-d", str(out), str(SOURCE)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    process = subprocess.Popen(
        [
            str(java),
            "-cp",
            f"{classpath}{os.pathsep}{out}",
            "org.apache.kafka.connect.mirror.ApacheOracle",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        yield ApacheOracle(process)
    finally:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.close()
        process.wait(timeout=30)
        process.stdout.close()  # else its pipe is left to the collector: a ResourceWarning
