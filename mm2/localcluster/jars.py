"""Resolving Apache Kafka's jars from Maven Central with the packaged pom, cached per version."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path

from mm2.errors import JarResolutionError

__all__ = [
    "KAFKA_VERSION",
    "cache_dir",
    "explain_maven_failure",
    "pom_text",
    "resolve_classpath",
    "scala_version",
]

KAFKA_VERSION = "4.4.0"
_MVN_TIMEOUT_S = 900
# Named in full (not the `dependency:` prefix) so the version is pinned and an unreachable
# repository is reported as such rather than as "no plugin found for prefix".
_DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1"
_MISSING = re.compile(
    r"(?:Could not find artifact|Failure to find|The following artifacts could not be resolved:)"
    r"\s+([\w.\-]+:[\w.\-]+(?::[\w.\-]+)*)"
)
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_UNREACHABLE = (
    "Connect to",
    "Connection refused",
    "Network is unreachable",
    "Unknown host",
    "UnknownHostException",
    "No route to host",
    "timed out",
    "Could not transfer",
    "transfer failed",
)


def scala_version(kafka_version: str) -> str:
    """The Scala build of the broker's jar to resolve: 2.13 from Kafka 2.4 on (the first built
    for it), 2.12 before (2.0 and 0.11 were built for 2.11 and 2.12 only)."""
    try:
        major, minor = (int(part) for part in kafka_version.split(".")[:2])
    except ValueError:
        return "2.13"  # not a release number: mvn names what it could not find
    return "2.13" if (major, minor) >= (2, 4) else "2.12"


def pom_text() -> str:
    """The pom shipped with this package."""
    return (resources.files(__package__) / "pom.xml").read_text(encoding="utf-8")


def cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """Where resolved classpaths are remembered: $XDG_CACHE_HOME/mm2 or ~/.cache/mm2."""
    env = os.environ if env is None else env
    base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "mm2"


def explain_maven_failure(output: str, kafka_version: str) -> str:
    """One sentence from mvn's output: which artifact is missing, or that Central is unreachable."""
    output = _ANSI.sub("", output)
    errors = [line.strip() for line in output.splitlines() if "[ERROR]" in line]
    key = next((e for e in errors if "Failed to execute" in e or "could not be" in e), None)
    key = key or (errors[0] if errors else output.strip()[-400:])
    key = key.replace("[ERROR]", "").strip()
    if any(marker in output for marker in _UNREACHABLE):
        return (
            "Maven Central unreachable while resolving Apache Kafka "
            f"{kafka_version}; check the network or proxy in ~/.m2/settings.xml. mvn said: {key}"
        )
    missing = _MISSING.search(output)
    if missing is not None:
        return (
            f"artifact {missing.group(1)} cannot be resolved from Maven Central (is Kafka "
            f"version {kafka_version!r} released?). mvn said: {key}"
        )
    return f"mvn could not resolve Apache Kafka {kafka_version}: {key}"


def _read_cached(path: Path) -> tuple[Path, ...] | None:
    try:
        text = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return None
    return _read_cached_text(text)  # None when ~/.m2 was cleaned: resolve again


def _run_mvn(pom: Path, out: Path, kafka_version: str, maven_options: Sequence[str]) -> None:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise JarResolutionError(
            "mvn is not on PATH; install Maven 3.8+ (e.g. apt-get install maven) so the "
            f"Apache Kafka {kafka_version} jars can be resolved from Maven Central"
        )
    scala = scala_version(kafka_version)
    command = [
        mvn,
        "-B",
        "-q",
        "-Dstyle.color=never",
        "-f",
        str(pom),
        f"-Dkafka.version={kafka_version}",
        f"-Dkafka.scala.version={scala}",
        # the pom's old-zookeeper profile: Kafka moved to ZooKeeper 3.5 in 2.4, with Scala 2.13
        *(["-Dold.zookeeper"] if scala != "2.13" else []),
        *maven_options,
        _DEPENDENCY_PLUGIN + ":build-classpath",
        f"-Dmdep.outputFile={out}",
    ]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=_MVN_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired as exc:
        raise JarResolutionError(
            f"mvn took over {_MVN_TIMEOUT_S}s resolving Apache Kafka {kafka_version}; "
            "Maven Central unreachable or very slow"
        ) from exc
    if done.returncode != 0 or not out.is_file():
        raise JarResolutionError(explain_maven_failure(done.stdout + done.stderr, kafka_version))


def resolve_classpath(
    kafka_version: str = KAFKA_VERSION,
    *,
    cache: Path | None = None,
    maven_options: Sequence[str] = (),
    pom_xml: str | None = None,
) -> tuple[Path, ...]:
    """The jars that run Kafka's broker and storage tool; mvn runs only on a cache miss.

    `pom_xml` replaces the packaged pom's text (the benchmark resolves Apache MM2 with its own);
    it is part of the cache key, so each pom keeps its own classpath file.
    """
    text = pom_text() if pom_xml is None else pom_xml
    digest = hashlib.sha256(f"{text}\0{kafka_version}\0{maven_options}".encode()).hexdigest()
    folder = cache or cache_dir()
    cached = folder / f"kafka-{kafka_version}-{digest[:12]}.classpath"
    jars = _read_cached(cached)
    if jars is not None:
        return jars
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="mm2-pom-") as tmp:
        pom = Path(tmp) / "pom.xml"
        pom.write_text(text, encoding="utf-8")
        out = Path(tmp) / "classpath.txt"
        _run_mvn(pom, out, kafka_version, maven_options)
        resolved = out.read_text(encoding="utf-8").strip()
    jars = _read_cached_text(resolved)
    if jars is None:
        raise JarResolutionError(f"mvn resolved no usable jars for Apache Kafka {kafka_version}")
    partial = cached.with_suffix(f".{os.getpid()}.tmp")
    partial.write_text(resolved, encoding="utf-8")
    partial.replace(cached)  # atomic, so a concurrent reader never sees half a classpath
    return jars


def _read_cached_text(text: str) -> tuple[Path, ...] | None:
    jars = tuple(Path(p) for p in text.split(os.pathsep) if p)
    return jars if jars and all(jar.is_file() for jar in jars) else None
