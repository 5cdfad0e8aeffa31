"""Apache Kafka's MirrorMaker 2 jars, resolved from Maven Central with bench/pom.xml."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from mm2.errors import JarResolutionError
from mm2.localcluster import KAFKA_VERSION, resolve_classpath

__all__ = [
    "FALLBACK_VERSIONS",
    "LOG4J2",
    "MAIN_CLASS",
    "ApacheJars",
    "candidate_versions",
    "resolve_apache_mm2",
]

MAIN_CLASS = "org.apache.kafka.connect.mirror.MirrorMaker"
# connect-mirror 4.4.0 is not on Maven Central yet (see bench/pom.xml): the newest that is.
FALLBACK_VERSIONS: tuple[str, ...] = ("4.3.1",)
POM = Path(__file__).with_name("pom.xml")

# Warnings only, to a file: Connect logs every record batch's commit at INFO otherwise.
LOG4J2 = """\
status = warn
appender.out.type = Console
appender.out.name = out
appender.out.target = SYSTEM_OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.out.ref = out
logger.mirror.name = org.apache.kafka.connect.mirror
logger.mirror.level = INFO
"""


class ApacheJars(NamedTuple):
    version: str
    classpath: tuple[Path, ...]
    # Why the brokers' version was not used, if it was not.
    note: str


def candidate_versions(kafka_version: str = KAFKA_VERSION) -> list[str]:
    """The brokers' version first, then the fallbacks older than it, newest first."""
    rest = [v for v in FALLBACK_VERSIONS if v != kafka_version]
    return [kafka_version, *rest]


def resolve_apache_mm2(versions: Sequence[str] | None = None) -> ApacheJars:
    """The first version of connect-mirror that Maven resolves, with its runtime classpath."""
    pom = POM.read_text(encoding="utf-8")
    failures: list[str] = []
    for version in versions or candidate_versions():
        try:
            jars = resolve_classpath(version, pom_xml=pom)
        except JarResolutionError as exc:
            failures.append(f"{version}: {exc}")
            continue
        note = "" if not failures else "; ".join(failures)
        return ApacheJars(version, jars, note)
    raise JarResolutionError("no version of connect-mirror resolved: " + " | ".join(failures))
