"""A lost offsets topic in a flow that translates schema IDs: rebuilt, nothing copied twice and
nothing skipped, RUNNING again with no REST call, whatever auto.offset.reset says. Real brokers,
two real Apicurio registries (the target numbers schemas its own way), the mirror as a process.

The offsets topic holds the positions and the schema-ID map. Deleted while the mirror is down,
it is created again at the next start: the positions are proven from the offset syncs with the
copies paired to their source records but for the schema ID, and the schema connector writes
its whole map again, so the copy tasks hold nothing for long.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from tests.integration.test_schema_mirror import V1, _pad
from tests.support.kafka import Cluster, create_topic, read_topic
from tests.support.mirror import MirrorProcess, write_properties
from tests.support.registry import ApicurioRegistry
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration


def _produce(cluster: Cluster, registry: str, topic: str, first: int, n: int) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 5})
    with SchemaRegistryClient({"url": registry}) as client:
        serialize = AvroSerializer(client, json.dumps(V1))
        for i in range(first, first + n):
            row = {"id": i, "item": f"item-{i}"}
            value = serialize(row, SerializationContext(topic, MessageField.VALUE))
            producer.produce(topic, value, b"%d" % i, partition=i % 2)
    assert producer.flush(30) == 0


def _ids(cluster: Cluster, topic: str, registry: str) -> list[int]:
    """The id field of every record of the remote topic, read committed, decoded with the
    target's registry, partition by partition."""
    read = read_topic(cluster.bootstrap_servers, topic, **{"isolation.level": "read_committed"})
    with SchemaRegistryClient({"url": registry}) as client:
        deserialize = AvroDeserializer(client)
        return [
            deserialize(r[2], SerializationContext(topic, MessageField.VALUE))["id"]
            for p in sorted(read)
            for r in read[p]
        ]


@pytest.mark.parametrize("reset", ["earliest", "latest"])
def test_a_lost_offsets_topic_in_a_translating_flow_is_rebuilt_exactly(
    primary: Cluster,
    backup: Cluster,
    registries: tuple[ApicurioRegistry, ApicurioRegistry],
    tmp_path: Path,
    reset: str,
) -> None:
    source_registry, target_registry = registries
    topic = f"lostschema-{uuid.uuid4().hex[:8]}"
    remote = f"primary.{topic}"
    create_topic(primary, topic, partitions=2)
    _pad(target_registry, topic, 3)
    offsets = f"mm2-offsets.{uuid.uuid4().hex[:8]}.internal"

    def properties(reset: str) -> Path:
        return write_properties(
            tmp_path,
            primary.bootstrap_servers,
            backup.bootstrap_servers,
            topic,
            f"offset.storage.topic = {offsets}\n"
            f"primary.schema.registry.url = {source_registry.url}\n"
            f"backup.schema.registry.url = {target_registry.url}\n"
            f"primary.consumer.auto.offset.reset = {reset}\n",
        )

    props = properties("earliest")  # the first run copies what was there before it
    _produce(primary, source_registry.url, topic, 0, 400)
    with MirrorProcess(props) as mirror:
        eventually(
            lambda: len(_ids(backup, remote, target_registry.url)) >= 400,
            timeout=240,
            what="the first 400 records",
            log=mirror.log,
        )
        assert mirror.stop() == 0
    admin = AdminClient({"bootstrap.servers": backup.bootstrap_servers})
    admin.delete_topics([offsets], operation_timeout=30)[offsets].result(60)
    eventually(
        lambda: offsets not in admin.list_topics(timeout=10).topics,
        timeout=60,
        what=f"{offsets} deleted",
    )
    _produce(primary, source_registry.url, topic, 400, 200)
    with MirrorProcess(properties(reset)) as mirror:
        eventually(
            lambda: len(_ids(backup, remote, target_registry.url)) >= 600,
            timeout=240,
            what="the 200 records written while it was stopped",
            log=mirror.log,
        )
        time.sleep(3)  # time enough to copy anything twice, if it would
        assert mirror.stop() == 0
        text = mirror.log()
    assert f"{offsets} was missing on backup and was created again" in text
    ids = _ids(backup, remote, target_registry.url)
    assert sorted(ids) == list(range(600)), (
        f"{len(ids)} records, {len(ids) - len(set(ids))} twice, "
        f"{len(set(range(600)) - set(ids))} missing"
    )
    assert "has waited" not in text  # no partition held past schema.ids.wait.ms
