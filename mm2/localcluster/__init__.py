"""Real Apache Kafka clusters on loopback, started from jars that Maven resolves: no Docker."""

from __future__ import annotations

from mm2.localcluster.cluster import LocalCluster
from mm2.localcluster.clusters import LocalClusters
from mm2.localcluster.jars import KAFKA_VERSION, resolve_classpath
from mm2.localcluster.java import (
    C1_ONLY,
    DEFAULT_JVM_OPTIONS,
    SERVER_JVM_OPTIONS,
    JavaRuntime,
    find_java,
)
from mm2.localcluster.kdc import LocalKdc
from mm2.localcluster.security import (
    BrokerTls,
    SecureListener,
    gssapi_listener,
    mutual_tls_listener,
    scram_listener,
)

__all__ = [
    "C1_ONLY",
    "DEFAULT_JVM_OPTIONS",
    "KAFKA_VERSION",
    "SERVER_JVM_OPTIONS",
    "BrokerTls",
    "JavaRuntime",
    "LocalCluster",
    "LocalClusters",
    "LocalKdc",
    "SecureListener",
    "find_java",
    "gssapi_listener",
    "mutual_tls_listener",
    "resolve_classpath",
    "scram_listener",
]
