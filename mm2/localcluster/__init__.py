"""Real Apache Kafka clusters on loopback, started from jars that Maven resolves: no Docker."""

from __future__ import annotations

from mm2.localcluster.cluster import DEFAULT_JVM_OPTIONS, LocalCluster, LocalClusters
from mm2.localcluster.jars import KAFKA_VERSION, resolve_classpath
from mm2.localcluster.java import JavaRuntime, find_java

__all__ = [
    "DEFAULT_JVM_OPTIONS",
    "KAFKA_VERSION",
    "JavaRuntime",
    "LocalCluster",
    "LocalClusters",
    "find_java",
    "resolve_classpath",
]
