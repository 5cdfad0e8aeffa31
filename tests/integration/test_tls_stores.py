"""JKS stores end to end: a broker that requires client certificates (mutual TLS), reached by
the clients mm2 builds from a mm2.properties that names a JKS truststore and a JKS keystore
(store and key passwords differ), as Java users have them."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from mm2.config import load
from mm2.localcluster import LocalCluster
from tests.support.stores import (
    KEY_PASSWORD,
    STORE_PASSWORD,
    TRUST_PASSWORD,
    Stores,
    make_stores,
)

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Stores:
    return make_stores(tmp_path_factory.mktemp("tls-stores"))


@pytest.fixture(scope="module")
def tls_broker(stores: Stores) -> Iterator[str]:
    """A one-node cluster with an SSL listener that requires a client certificate."""
    broker = {
        "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(stores.broker_pem),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(stores.ca_pem),
        "ssl.client.auth": "required",
    }
    with LocalCluster("tls", broker_config=broker) as cluster:
        yield cluster.listeners["SSL"]


def test_jks_stores_reach_a_mutual_tls_broker(
    tmp_path: Path, stores: Stores, tls_broker: str
) -> None:
    path = tmp_path / "mm2.properties"
    path.write_text(
        "clusters = tls, backup\n"
        f"tls.bootstrap.servers = {tls_broker}\nbackup.bootstrap.servers = 127.0.0.1:1\n"
        "tls->backup.enabled = true\n"
        "tls.security.protocol = SSL\n"
        f"tls.ssl.truststore.location = {stores.truststore_jks}\n"
        f"tls.ssl.truststore.password = {TRUST_PASSWORD}\n"
        f"tls.ssl.keystore.location = {stores.keystore_jks}\n"
        f"tls.ssl.keystore.password = {STORE_PASSWORD}\n"
        f"tls.ssl.key.password = {KEY_PASSWORD}\n",
        encoding="utf-8",
    )
    flow = load(path).flow("tls", "backup")
    topic = f"tls-{uuid.uuid4().hex[:8]}"
    admin = AdminClient(dict(flow.source_admin_config()))
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=60)
    producer = Producer(dict(flow.source_producer_config()))
    producer.produce(topic, b"over mutual TLS")
    assert producer.flush(60) == 0
    consumer = Consumer({**flow.source_consumer_config(), "group.id": f"g-{topic}"})
    consumer.subscribe([topic])
    try:
        message = None
        for _ in range(60):
            message = consumer.poll(1.0)
            if message is not None and message.error() is None:
                break
        assert message is not None and message.error() is None
        assert message.value() == b"over mutual TLS"
    finally:
        consumer.close()


def test_a_client_without_the_keystore_is_refused(stores: Stores, tls_broker: str) -> None:
    """The broker really asks for a certificate: the truststore alone does not get in."""
    admin = AdminClient(
        {
            "bootstrap.servers": tls_broker,
            "security.protocol": "ssl",
            "ssl.ca.location": str(stores.ca_pem),
            "socket.timeout.ms": 5000,
        }
    )
    with pytest.raises(KafkaException):
        admin.list_topics(timeout=10)
