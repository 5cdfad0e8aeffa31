"""Spark's class-data archive made by a real JVM and mapped by the next one.

A JVM started with the option a first start gets writes the classes it loads; the archive made
from that list (java -Xshare:dump, as mm2 runs it) is then usable, and a JVM given the option a
later start gets maps it: with -Xshare:on a JVM that cannot map its archive does not start.
"""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest

from mm2.localcluster import find_java
from mm2.pipeline.class_archive import ClassArchive
from tests.support.apache_mm2 import apache_jars

pytestmark = [pytest.mark.integration]


LOADER = Path(__file__).parents[1] / "support" / "java" / "LoadClasses.java"
KAFKA_CLASS = "org.apache.kafka.common.utils.Utils"


def java(options: str, classpath: list[str], *args: str) -> subprocess.CompletedProcess[str]:
    command = [str(find_java().executable), *shlex.split(options), "-cp", ":".join(classpath)]
    return subprocess.run([*command, *args], capture_output=True, text=True, timeout=300)


def test_the_classes_a_start_loads_become_an_archive_the_next_start_maps(
    tmp_path: Path,
) -> None:
    # A few real jars (Kafka's clients among them), as Spark's classpath would be.
    jars = [str(j) for j in apache_jars().classpath if "kafka-clients" in j.name]
    assert jars, "kafka-clients is on Apache MM2's classpath"
    java_home = find_java().executable.resolve().parent.parent
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache"), "JAVA_HOME": str(java_home)}

    first = ClassArchive(env)
    listing = first.java_options("")
    assert listing.startswith("-XX:DumpLoadedClassList=")
    # A JVM that loads one of those jars' classes.
    ran = java(listing, jars, str(LOADER), KAFKA_CLASS)
    assert ran.returncode == 0, ran.stderr[-2000:]
    first.make(java_home, jars)
    assert first.usable(), "the archive and its manifest were written"

    later = ClassArchive(env)
    mapping = later.java_options("")
    assert mapping == f"-XX:SharedArchiveFile={later.archive}"
    # -Xshare:on: a JVM that cannot map the archive does not start.
    mapped = java(f"{mapping} -Xshare:on -Xlog:class+load=info", jars, str(LOADER), KAFKA_CLASS)
    assert mapped.returncode == 0, mapped.stderr[-2000:]
    loaded = [line for line in mapped.stdout.splitlines() if f" {KAFKA_CLASS} " in line]
    assert loaded and "source: shared objects file" in loaded[0], loaded or mapped.stdout[-2000:]
