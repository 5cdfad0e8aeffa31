"""Keys and values that only look like Confluent's wire format are copied byte for byte beside
framed records in one flow: real brokers, two real Apicurio registries, the mirror as a process.

The source registry's ID S of `orders`' value schema is mapped to another ID on the target (the
target registry numbers its own schemas first). Then, in one flow:
- `orders`: values written by the Avro serializer (rewritten: they decode on the target), keys
  written as LongSerializer does, a long whose bytes 1-4 read as S (no `orders-key` subject:
  byte for byte), and one value `0x00` + an ID no subject holds (held for three passes of the
  schema connector, then copied as it is);
- `raw`: no subject at all; the same look-alike keys, and raw Avro values that start with
  `0x00` and whose bytes 1-4 read as S: all byte for byte.
Each record once, in order.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from tests.integration.test_schema_mirror import V1, _pad, _properties
from tests.support.kafka import Cluster, Record, create_topic, read_topic
from tests.support.mirror import MirrorProcess
from tests.support.registry import ApicurioRegistry
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration


def _long(n: int) -> bytes:
    return n.to_bytes(8, "big")  # what Kafka's LongSerializer writes


def _copied(bootstrap: str, topic: str) -> list[Record]:
    return read_topic(bootstrap, topic, **{"isolation.level": "read_committed"}).get(0, [])


def test_lookalike_keys_and_values_stay_byte_for_byte_beside_framed_records(
    primary: Cluster,
    backup: Cluster,
    registries: tuple[ApicurioRegistry, ApicurioRegistry],
    tmp_path: Path,
) -> None:
    source_registry, target_registry = registries
    run = uuid.uuid4().hex[:8]
    orders, raw = f"orders-{run}", f"raw-{run}"
    for topic in (orders, raw):
        create_topic(primary, topic, partitions=1)
    _pad(target_registry, orders, 3)
    producer = Producer({"bootstrap.servers": primary.bootstrap_servers, "linger.ms": 5})
    rows = [{"id": i, "item": f"item-{i}"} for i in range(50)]
    with SchemaRegistryClient({"url": source_registry.url}) as client:
        serialize = AvroSerializer(client, json.dumps(V1))
        framed = [serialize(r, SerializationContext(orders, MessageField.VALUE)) for r in rows]
    assert all(v is not None for v in framed)
    source_id = int.from_bytes(framed[0][1:5], "big")
    lookalike_key = _long(source_id << 24)  # 00 | S | 00 00 00
    unknown_id = b"\x00" + (2**31 - 7).to_bytes(4, "big") + b"raw"  # held, then as it is
    raw_values = [b"\x00" + source_id.to_bytes(4, "big") + bytes([i, 0x0F]) for i in range(50)]
    for i, value in enumerate(framed):
        producer.produce(orders, value, lookalike_key if i % 2 else _long(i), partition=0)
    producer.produce(orders, unknown_id, _long(99), partition=0)
    for i, value in enumerate(raw_values):
        producer.produce(raw, value, lookalike_key if i % 2 else _long(i), partition=0)
    assert producer.flush(30) == 0
    sent_orders = _copied(primary.bootstrap_servers, orders)
    sent_raw = _copied(primary.bootstrap_servers, raw)
    assert len(sent_orders) == 51 and len(sent_raw) == 50

    props = _properties(tmp_path, primary, backup, f"{orders},{raw}", registries)
    with MirrorProcess(props) as mirror:
        eventually(
            lambda: (
                len(_copied(backup.bootstrap_servers, f"primary.{orders}")) >= 51
                and len(_copied(backup.bootstrap_servers, f"primary.{raw}")) >= 50
            ),
            timeout=240,
            what="every record of both topics",
            log=mirror.log,
        )
        assert mirror.stop() == 0
    log = mirror.log()
    got_orders = _copied(backup.bootstrap_servers, f"primary.{orders}")
    got_raw = _copied(backup.bootstrap_servers, f"primary.{raw}")
    # raw: no subject, so nothing is read as framed: keys and values byte for byte, once each
    assert [(r[1], r[2]) for r in got_raw] == [(r[1], r[2]) for r in sent_raw]
    # orders: keys byte for byte (no orders-key subject), the look-alike value as it was ...
    assert [r[1] for r in got_orders] == [r[1] for r in sent_orders]
    assert got_orders[-1][2] == unknown_id
    # ... and the framed values translated: another ID, and they decode to what was written
    values = [r[2] or b"" for r in got_orders[:-1]]
    assert {int.from_bytes(v[1:5], "big") for v in values} != {source_id}
    assert [v[5:] for v in values] == [(r[2] or b"")[5:] for r in sent_orders[:-1]]
    with SchemaRegistryClient({"url": target_registry.url}) as client:
        deserialize = AvroDeserializer(client)
        remote = f"primary.{orders}"
        decoded = [deserialize(v, SerializationContext(remote, MessageField.VALUE)) for v in values]
    assert decoded == rows
    assert "those bytes are no schema ID" in log  # the look-alike was decided by the passes
    assert "has waited" not in log  # nothing held past schema.ids.wait.ms
