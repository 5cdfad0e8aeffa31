"""A ZooKeeper-mode cluster (Kafka before 3.0): its ZooKeeper, started from the same jars as the
broker, and the broker's settings turned from the KRaft ones the launcher lays out.

Kafka 2.x brokers need a ZooKeeper ensemble; the launcher starts one node of it
(`ZooKeeperServerMain`, from the `org.apache.zookeeper:zookeeper` jar Kafka depends on) in the
cluster's directory, before the broker, and stops it after the broker. The broker gets
`broker.id` and `zookeeper.connect` instead of the KRaft roles, voters and controller listener.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

__all__ = ["MAIN", "is_zookeeper_version", "zoo_cfg", "zookeeper_properties"]

MAIN = "org.apache.zookeeper.server.ZooKeeperServerMain"
# ZooKeeper 3.4 (Kafka 2.0 and older) registers log4j 1's MBeans at start and dies without
# log4j 1's jmx classes; the broker's classpath logs through log4j 2.
JVM_OPTIONS = ("-Dzookeeper.jmx.log4j.disable=true",)
# KRaft-only settings a ZooKeeper-mode broker must not be given.
_KRAFT_ONLY = ("process.roles", "node.id", "controller.listener.names", "controller.quorum.voters")


def is_zookeeper_version(kafka_version: str) -> bool:
    """Kafka before 3.0 runs only with ZooKeeper."""
    major = re.match(r"(\d+)\.", kafka_version)
    return major is not None and int(major.group(1)) < 3


def zookeeper_properties(
    kraft: Mapping[str, str], controller: str, node_id: int, zookeeper_port: int
) -> dict[str, str]:
    """The broker's settings in ZooKeeper mode, from the KRaft layout: the controller's listener
    left out, `broker.id` and `zookeeper.connect` in."""
    properties = {k: v for k, v in kraft.items() if k not in _KRAFT_ONLY}
    properties["listeners"] = _without(kraft["listeners"], controller)
    properties["listener.security.protocol.map"] = _without(
        kraft["listener.security.protocol.map"], controller, sep=":"
    )
    properties["broker.id"] = str(node_id)
    properties["zookeeper.connect"] = f"127.0.0.1:{zookeeper_port}"
    return properties


def _without(value: str, listener: str, sep: str = "://") -> str:
    return ",".join(e for e in value.split(",") if not e.strip().startswith(listener + sep))


def zoo_cfg(data_dir: Path, port: int) -> str:
    """One standalone ZooKeeper node on loopback."""
    return (
        f"dataDir={data_dir}\nclientPort={port}\nclientPortAddress=127.0.0.1\n"
        "maxClientCnxns=0\nadmin.enableServer=false\ntickTime=2000\n"
    )
