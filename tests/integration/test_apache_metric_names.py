"""Every metric Apache MirrorMaker 2 4.3.1 registers for a flow has its series on mm2's /metrics.

Apache MM2 runs a flow (records copied, a consumer group checkpointed) with
`metric.names.formats = legacy,new`, so it registers both its legacy MBeans
(`kafka.connect.mirror:type=MirrorSourceConnector|MirrorCheckpointConnector,...`) and KIP-1280's
(`kafka.connect:type=plugins,...`). A small Java program (tests/support/java/ListMBeans.java)
lists them over JMX remote. Each becomes the series Prometheus' JMX exporter writes under the
common rules (Strimzi's `kafka-mirror-maker-2-metrics.yaml`): `<domain>_<type>_<attribute>` in
lower case, every other character `_`, the MBean's other tags as labels. Then mm2 runs the same
file (taking the flow over from Apache's positions) and each of those names, with the same
label names, must be on its /metrics. Left out: the JMX reporter's `kafka-metrics-count` MBean,
which every Kafka metrics domain has and counts the registry's metrics.

The dashboards' Consumer Lag panels chart the source task's consumer's `records-lag`
(`kafka.consumer:type=consumer-fetch-manager-metrics,client-id=...,topic=...,partition=...`):
mm2 must serve it with the same client id, topic and partition label values.
"""

from __future__ import annotations

import re
import subprocess
import uuid
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from bench.systems import ONE_REPLICA
from mm2.localcluster import find_java
from tests.support.apache_mm2 import ApacheMirrorMaker, apache_jars, produce_numbered
from tests.support.kafka import Cluster, commit_group, create_topic
from tests.support.mirror import MirrorProcess, free_port
from tests.support.waiting import eventually

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

APACHE_VERSION = "4.3.1"  # the first release with metric.names.formats (KIP-1280)
LISTER = Path(__file__).parents[1] / "support" / "java" / "ListMBeans.java"
PATTERNS = ("kafka.connect.mirror:*", "kafka.connect:type=plugins,*")
FETCH_MANAGER = "kafka.consumer:type=consumer-fetch-manager-metrics,*"
RECORDS_LAG = "kafka_consumer_fetch_manager_records_lag"
PARTITIONS = 2
# The JMX reporter's own MBean in every metrics domain (how many metrics the registry holds):
# bookkeeping, not one of MirrorMaker's metrics, and no dashboard's.
BOOKKEEPING = "kafka-metrics-count"
# (series name, its label names)
Series = tuple[str, frozenset[str]]


def exported(object_name: str, attribute: str) -> Series:
    """The series the JMX exporter's common rules make of one MBean attribute."""
    domain, _, properties = object_name.partition(":")
    tags = dict(p.split("=", 1) for p in properties.split(","))
    kind = tags.pop("type")
    name = re.sub(r"[^a-z0-9_]", "_", f"{domain}_{kind}_{attribute}".lower())
    return name, frozenset(label.lower() for label in tags)


def listed(jmx_port: int, *patterns: str) -> list[tuple[str, str]]:
    """(object name, attribute) of every MBean attribute the JVM on `jmx_port` registers under
    `patterns`."""
    done = subprocess.run(
        [str(find_java().executable), str(LISTER), str(jmx_port), *patterns],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = (line.split("\t", 1) for line in done.stdout.splitlines() if "\t" in line)
    return [(name, attribute) for name, attribute in lines]


def registered(jmx_port: int) -> set[Series]:
    """What the JVM listening on `jmx_port` registers under PATTERNS, as exported series."""
    return {
        exported(name, attribute)
        for name, attribute in listed(jmx_port, *PATTERNS)
        if f"type={BOOKKEEPING}" not in name.split(":", 1)[1].split(",")
    }


def replication_lags(jmx_port: int, topic: str) -> set[tuple[str, str, str]]:
    """(client id, topic, partition) of each records-lag the JVM registers for `topic`'s
    partitions, as the JMX exporter's labels keep them (Kafka's quoting included)."""
    found = set()
    for name, attribute in listed(jmx_port, FETCH_MANAGER):
        tags = dict(p.split("=", 1) for p in name.split(":", 1)[1].split(","))
        if attribute == "records-lag" and tags.get("topic") == topic and "partition" in tags:
            found.add((tags["client-id"], tags["topic"], tags["partition"]))
    return found


def served_lags(port: int, topic: str) -> set[tuple[str, str, str]]:
    """(clientid, topic, partition) of the records-lag series mm2's /metrics serves now."""
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=30).text
    return {
        (s.labels["clientid"], s.labels["topic"], s.labels["partition"])
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == RECORDS_LAG and s.labels.get("topic") == topic
    }


def served(port: int) -> set[Series]:
    """The series mm2's /metrics serves now (sample names, as Prometheus stores them)."""
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=30).text
    return {
        (sample.name, frozenset(sample.labels))
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def properties(primary: Cluster, backup: Cluster, topic: str, group: str, tmp: Path) -> str:
    return f"""\
clusters = primary, backup
primary.bootstrap.servers = {primary.bootstrap_servers}
backup.bootstrap.servers = {backup.bootstrap_servers}
primary->backup.enabled = true
primary->backup.topics = {topic}
primary->backup.groups = {group}
backup->primary.enabled = false
metric.names.formats = legacy,new
emit.checkpoints.interval.seconds = 1
refresh.groups.interval.seconds = 1
sync.group.offsets.enabled = false
sync.topic.acls.enabled = false
{ONE_REPLICA}listeners = http://127.0.0.1:{free_port()}
mm2.state.dir = {tmp / "mm2-state"}
mm2.configs.topic = mm2-configs.{uuid.uuid4().hex[:12]}.internal
"""


def test_every_metric_apache_mm2_registers_is_served_by_mm2(
    primary: Cluster, backup: Cluster, tmp_path: Path
) -> None:
    topic = create_topic(primary, f"names-{uuid.uuid4().hex[:8]}", partitions=PARTITIONS)
    group = f"names-group-{uuid.uuid4().hex[:8]}"
    produce_numbered(primary.bootstrap_servers, topic, "a", 2_000, PARTITIONS)
    commit_group(primary.bootstrap_servers, group, {(topic, p): 500 for p in range(PARTITIONS)})
    text = properties(primary, backup, topic, group, tmp_path)
    rest_port = int(re.findall(r"listeners = http://127.0.0.1:(\d+)", text)[0])

    jmx_port = free_port()
    jmx = [
        f"-Dcom.sun.management.jmxremote.port={jmx_port}",
        f"-Dcom.sun.management.jmxremote.rmi.port={jmx_port}",
        "-Dcom.sun.management.jmxremote.authenticate=false",
        "-Dcom.sun.management.jmxremote.ssl=false",
        "-Djava.rmi.server.hostname=127.0.0.1",
    ]
    apache_series: set[Series] = set()
    apache_lags: set[tuple[str, str, str]] = set()
    with ApacheMirrorMaker(
        text, tmp_path / "apache", jars=apache_jars(APACHE_VERSION), jvm_options=jmx
    ) as apache:
        apache.wait_started()

        def both_connectors_registered() -> bool:
            apache_series.update(registered(jmx_port))
            apache_lags.update(replication_lags(jmx_port, topic))
            names = {name for name, _ in apache_series}
            return len(apache_lags) == PARTITIONS and all(
                any(n.startswith(prefix) for n in names)
                for prefix in (
                    "kafka_connect_mirror_mirrorsourceconnector_",
                    "kafka_connect_mirror_mirrorcheckpointconnector_",
                    "kafka_connect_plugins_",
                )
            )

        eventually(
            both_connectors_registered,
            timeout=240,
            what="Apache MM2's source and checkpoint metrics (legacy and new names) and its "
            "source task consumer's records-lag",
            interval=2.0,
            log=apache.log_tail,
        )
        apache_series.update(registered(jmx_port))
        apache.stop()

    file = tmp_path / "mm2.properties"
    file.write_text(text, encoding="utf-8")
    with MirrorProcess(file) as mm2:
        produce_numbered(primary.bootstrap_servers, topic, "b", 2_000, PARTITIONS)
        commit_group(
            primary.bootstrap_servers, group, {(topic, p): 1_500 for p in range(PARTITIONS)}
        )

        def missing() -> list[str]:
            ours = served(rest_port)
            return sorted(
                f"{n}{{{','.join(sorted(labels))}}}" for n, labels in apache_series - ours
            )

        eventually(
            lambda: not missing(),
            timeout=240,
            what="every series of Apache MM2's metrics on mm2's /metrics",
            interval=1.0,
            log=lambda: f"missing: {missing()}\n{mm2.log()[-3000:]}",
        )
        # the same consumer lag series as Apache's, label for label
        eventually(
            lambda: served_lags(rest_port, topic) == apache_lags,
            timeout=120,
            what=f"records-lag with Apache's labels {sorted(apache_lags)}",
            interval=1.0,
            log=lambda: f"served: {sorted(served_lags(rest_port, topic))}",
        )
        assert mm2.stop() == 0
