"""Finding a Java 17+ runtime for the local Kafka brokers."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from mm2.errors import JavaNotFoundError

__all__ = [
    "C1_ONLY",
    "DEFAULT_JVM_OPTIONS",
    "MIN_JAVA_MAJOR",
    "SERVER_JVM_OPTIONS",
    "JavaRuntime",
    "find_java",
    "parse_java_major",
]

MIN_JAVA_MAJOR = 17
_INSTALL_HINT = (
    "install a JDK 17 or newer (e.g. apt-get install openjdk-17-jdk-headless) or set JAVA_HOME"
)
_VERSION = re.compile(r'version "(\d+)(?:\.(\d+))?[^"]*"')


class JavaRuntime(NamedTuple):
    """A `java` executable and its major version."""

    executable: Path
    major: int


def parse_java_major(version_output: str) -> int | None:
    """The major version in `java -version` output: `"17.0.15"` -> 17, `"1.8.0_402"` -> 8."""
    match = _VERSION.search(version_output)
    if match is None:
        return None
    first = int(match.group(1))
    if first == 1 and match.group(2) is not None:
        return int(match.group(2))
    return first


def _candidate(env: Mapping[str, str]) -> Path:
    java_home = env.get("JAVA_HOME")
    if java_home:
        in_home = Path(java_home) / "bin" / "java"
        if os.access(in_home, os.X_OK):
            return in_home
    on_path = shutil.which("java", path=env.get("PATH", ""))
    if on_path is not None:
        return Path(on_path)
    where = f"JAVA_HOME={java_home!r} has no bin/java and " if java_home else ""
    raise JavaNotFoundError(f"no java found: {where}none is on PATH; {_INSTALL_HINT}")


def find_java(env: Mapping[str, str] | None = None) -> JavaRuntime:
    """The `java` of JAVA_HOME, else of PATH, checked to be version 17 or newer."""
    env = os.environ if env is None else env
    executable = _candidate(env)
    try:
        probe = subprocess.run(
            [str(executable), "-version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise JavaNotFoundError(f"{executable} does not run ({exc}); {_INSTALL_HINT}") from exc
    major = parse_java_major(probe.stderr + probe.stdout)
    if probe.returncode != 0 or major is None:
        raise JavaNotFoundError(
            f"{executable} -version failed or printed no version; {_INSTALL_HINT}"
        )
    if major < MIN_JAVA_MAJOR:
        raise JavaNotFoundError(
            f"{executable} is Java {major}, Kafka 4 needs {MIN_JAVA_MAJOR}+; {_INSTALL_HINT}"
        )
    return JavaRuntime(executable, major)


# A broker's JVM options with HotSpot's full JIT, as a long-running broker has: what the bench
# measures against.
SERVER_JVM_OPTIONS: tuple[str, ...] = (
    "-Xms128m",
    "-Xmx512m",
    "-XX:+UseSerialGC",  # two cores shared by several JVMs and Spark: no parallel GC threads
    "-XX:+ExitOnOutOfMemoryError",
    "-Djava.awt.headless=true",
)
# HotSpot's quick compiler (C1) only: for JVMs that live for minutes, whose second compiler
# would spend its CPU on code that never runs long enough to gain from it.
C1_ONLY = "-XX:TieredStopAtLevel=1"
# LocalCluster's default: clusters that live for minutes (tests, the demo) compile with C1
# only. Two broker tests (test_versions, four brokers and two mirrors) used 20 % less CPU with
# it, the machine's whole CPU measured from /proc/stat.
DEFAULT_JVM_OPTIONS: tuple[str, ...] = (*SERVER_JVM_OPTIONS, C1_ONLY)
