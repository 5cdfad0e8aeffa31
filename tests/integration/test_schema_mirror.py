"""Records written with Confluent's Avro and Protobuf serializers are read on the target with
the target's registry: real brokers, two real Apicurio 3.0.9 registries, the mirror
as a process.

The target registry is given schemas of its own first, so that it numbers the mirrored ones
differently from the source: a record copied with the source's ID would decode with the wrong
schema (or not at all). The schema evolves while the mirror runs, the mirror is stopped and
started again in the middle (its first version soft-deleted on the source meanwhile), and the
subject follows the replication policy's topic name.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import (  # type: ignore[import-untyped]
    descriptor_pb2,
    descriptor_pool,
    message_factory,
)

from tests.support.kafka import Cluster, count, create_topic
from tests.support.mirror import MirrorProcess, write_properties
from tests.support.registry import ApicurioRegistry
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

V1 = {
    "type": "record",
    "name": "Order",
    "namespace": "acme",
    "fields": [{"name": "id", "type": "long"}, {"name": "item", "type": "string"}],
}
V2 = {**V1, "fields": [*V1["fields"], {"name": "qty", "type": "int", "default": 1}]}


def _produce(
    bootstrap: str, registry: str, topic: str, schema: dict[str, Any], rows: list[dict[str, Any]]
) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    with SchemaRegistryClient({"url": registry}) as client:
        serialize = AvroSerializer(client, json.dumps(schema))
        for row in rows:
            value = serialize(row, SerializationContext(topic, MessageField.VALUE))
            producer.produce(topic, value, str(row["id"]).encode(), partition=0)
    assert producer.flush(30) == 0


def _read(bootstrap: str, topic: str) -> list[bytes]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"r-{uuid.uuid4().hex}",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    values: list[bytes] = []
    try:
        while True:
            msg = consumer.poll(10)
            assert msg is not None, f"{topic}: no end of partition within 10 s"
            if msg.error():
                break
            values.append(msg.value() or b"")
    finally:
        consumer.close()
    return values


def _pad(registry: ApicurioRegistry, topic: str, n: int) -> None:
    """Schemas of the target's own, so that it numbers the mirrored ones differently from the
    source: a record copied with the source's ID would then point at the wrong schema."""
    for i in range(n):
        own = {"type": "record", "name": f"Pad{i}", "fields": [{"name": "x", "type": "int"}]}
        answer = httpx.post(
            f"{registry.url}/subjects/pad-{i}-{topic}/versions",
            json={"schema": json.dumps(own)},
            timeout=30,
        )
        assert answer.status_code == 200, answer.text


def _properties(
    directory: Path,
    primary: Cluster,
    backup: Cluster,
    topic: str,
    registries: tuple[ApicurioRegistry, ApicurioRegistry],
) -> Path:
    source, target = registries
    return write_properties(
        directory,
        primary.bootstrap_servers,
        backup.bootstrap_servers,
        topic,
        extra=f"primary.schema.registry.url = {source.url}\n"
        f"backup.schema.registry.url = {target.url}\n",
    )


def _schema_id(value: bytes) -> int:
    assert value[:1] == b"\x00", value[:8]
    return int.from_bytes(value[1:5], "big")


def test_avro_records_decode_on_the_target_with_the_targets_registry(
    primary: Cluster,
    backup: Cluster,
    registries: tuple[ApicurioRegistry, ApicurioRegistry],
    tmp_path: Path,
) -> None:
    source_registry, target_registry = registries
    topic = f"orders-{uuid.uuid4().hex[:8]}"
    remote = f"primary.{topic}"
    create_topic(primary, topic, partitions=1)
    _pad(target_registry, topic, 3)
    rows = [{"id": i, "item": f"item-{i}"} for i in range(200)]
    _produce(primary.bootstrap_servers, source_registry.url, topic, V1, rows)
    props = _properties(tmp_path, primary, backup, topic, registries)
    with MirrorProcess(props) as mirror:
        eventually(
            lambda: count(backup.bootstrap_servers, remote) >= 200,
            timeout=240,
            what="the first 200 records",
            log=mirror.log,
        )
        # The schema evolves while the mirror runs: the new version is registered on the
        # source by the serializer, a moment before its first record.
        evolved = [{"id": i, "item": f"item-{i}", "qty": i % 7} for i in range(200, 400)]
        _produce(primary.bootstrap_servers, source_registry.url, topic, V2, evolved)
        rows += evolved
        eventually(
            lambda: count(backup.bootstrap_servers, remote) >= 400,
            timeout=240,
            what="the 200 records of the evolved schema",
            log=mirror.log,
        )
        assert mirror.stop() == 0
    more = [{"id": i, "item": f"item-{i}", "qty": 3} for i in range(400, 500)]
    _produce(primary.bootstrap_servers, source_registry.url, topic, V2, more)
    rows += more
    # While it is down, the first version is soft-deleted on the source: the target's copy is
    # soft-deleted too, and the records written with it still decode there (by their ID).
    gone = httpx.delete(f"{source_registry.url}/subjects/{topic}-value/versions/1", timeout=30)
    assert gone.status_code == 200, gone.text
    versions = f"{target_registry.url}/subjects/{remote}-value/versions"
    with MirrorProcess(props) as mirror:  # started again: the map is read back from Kafka
        eventually(
            lambda: count(backup.bootstrap_servers, remote) >= 500,
            timeout=240,
            what="records written while the mirror was down",
            log=mirror.log,
        )
        eventually(
            lambda: httpx.get(versions, timeout=30).json() == [2],
            timeout=120,
            what="version 1 soft-deleted on the target",
            log=mirror.log,
        )
        assert mirror.stop() == 0
    assert httpx.get(versions, params={"deleted": "true"}, timeout=30).json() == [1, 2]
    log = mirror.log()
    copied = _read(backup.bootstrap_servers, remote)
    assert len(copied) == len(rows)  # each once
    source_values = _read(primary.bootstrap_servers, topic)
    # The IDs were translated: the target's differ from the source's ...
    assert {_schema_id(v) for v in copied}.isdisjoint({_schema_id(v) for v in source_values})
    # ... and every record decodes, with the target's registry, to what was produced.
    with SchemaRegistryClient({"url": target_registry.url}) as client:
        deserialize = AvroDeserializer(client)
        decoded = [deserialize(v, SerializationContext(remote, MessageField.VALUE)) for v in copied]
    assert decoded == rows  # each with the fields of the schema it was written with
    # Bytes after the ID are the source's, byte for byte.
    assert [v[5:] for v in copied] == [v[5:] for v in source_values]
    # The subject follows the topic's remote name.
    subjects = httpx.get(f"{target_registry.url}/subjects", timeout=30).json()
    assert f"{remote}-value" in subjects, subjects
    assert "schema.ids.wait.ms" not in log  # no record waited past the bound


def _order_type() -> Any:
    """`acme.Order` (acme/order.proto), whose `total` is an `acme.Money` of another file
    (acme/common.proto): the serializer registers that file as a subject of its own, and the
    order's schema refers to it."""
    common = descriptor_pb2.FileDescriptorProto(
        name="acme/common.proto", package="acme", syntax="proto3"
    )
    money = common.message_type.add(name="Money")
    money.field.add(name="cents", number=1, type=3, label=1)  # int64
    money.field.add(name="currency", number=2, type=9, label=1)  # string
    order_file = descriptor_pb2.FileDescriptorProto(
        name="acme/order.proto", package="acme", syntax="proto3", dependency=["acme/common.proto"]
    )
    order = order_file.message_type.add(name="Order")
    order.field.add(name="id", number=1, type=9, label=1)
    order.field.add(name="total", number=2, type=11, label=1, type_name=".acme.Money")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(common)
    pool.Add(order_file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("acme.Order"))


def test_protobuf_records_with_a_reference_keep_their_indexes_and_payload(
    primary: Cluster,
    backup: Cluster,
    registries: tuple[ApicurioRegistry, ApicurioRegistry],
    tmp_path: Path,
) -> None:
    source_registry, target_registry = registries
    topic = f"payments-{uuid.uuid4().hex[:8]}"
    remote = f"primary.{topic}"
    create_topic(primary, topic, partitions=1)
    _pad(target_registry, topic, 2)
    order_type = _order_type()
    producer = Producer({"bootstrap.servers": primary.bootstrap_servers})
    sent = []
    with SchemaRegistryClient({"url": source_registry.url}) as client:
        serialize = ProtobufSerializer(order_type, client, {"use.deprecated.format": False})
        for i in range(100):
            order = order_type(id=f"o-{i}")
            order.total.cents, order.total.currency = i * 100, "EUR"
            sent.append(order)
            value = serialize(order, SerializationContext(topic, MessageField.VALUE))
            producer.produce(topic, value, None, partition=0)
    assert producer.flush(30) == 0
    props = _properties(tmp_path, primary, backup, topic, registries)
    with MirrorProcess(props) as mirror:
        eventually(
            lambda: count(backup.bootstrap_servers, remote) >= 100,
            timeout=240,
            what="the 100 Protobuf records",
            log=mirror.log,
        )
        assert mirror.stop() == 0
    copied = _read(backup.bootstrap_servers, remote)
    source_values = _read(primary.bootstrap_servers, topic)
    assert len(copied) == 100
    source_ids = {_schema_id(v) for v in source_values}
    target_ids = {_schema_id(v) for v in copied}
    assert source_ids.isdisjoint(target_ids)
    # The message indexes and the payload after the ID are the source's, byte for byte.
    assert [v[5:] for v in copied] == [v[5:] for v in source_values]
    deserialize = ProtobufDeserializer(order_type, {"use.deprecated.format": False})
    assert [
        deserialize(v, SerializationContext(remote, MessageField.VALUE)) for v in copied
    ] == sent
    # The target's schema under that ID is the order, referring to the common file's subject.
    (target_id,) = target_ids
    schema = httpx.get(f"{target_registry.url}/schemas/ids/{target_id}", timeout=30).json()
    assert schema.get("schemaType") == "PROTOBUF", schema
    assert [r["name"] for r in schema.get("references", [])] == ["acme/common.proto"], schema
