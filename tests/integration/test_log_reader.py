"""LogReader on a broker: a read to the end asks the broker where the end is; a read of what
arrived asks nothing and still sees each new record once (mm2.kafka.log_reader)."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Producer

from mm2.kafka.log_reader import LogReader, LogRecord
from tests.support.kafka import Cluster, create_topic
from tests.support.waiting import eventually

pytestmark = [pytest.mark.integration]


def test_a_read_of_what_arrived_sees_each_new_record_once(primary: Cluster) -> None:
    topic = create_topic(primary, f"log-reader-{uuid.uuid4().hex[:8]}")
    producer = Producer({"bootstrap.servers": primary.bootstrap_servers})

    def write(*values: bytes) -> None:
        for value in values:
            producer.produce(topic, value)
        assert producer.flush(30) == 0

    reader = LogReader(primary.client_config(), topic)
    try:
        write(b"a", b"b", b"c")
        assert [r.value for r in reader.read_to_end()] == [b"a", b"b", b"c"]
        assert reader.read_new() == []
        write(b"d", b"e")
        seen: list[LogRecord] = []

        def arrived() -> bool:
            seen.extend(reader.read_new())
            return len(seen) >= 2

        eventually(arrived, timeout=60, what="the new records fetched")
        assert [(r.offset, r.value) for r in seen] == [(3, b"d"), (4, b"e")]
        assert reader.position == 5
        assert reader.read_to_end() == [] and reader.read_new() == []
    finally:
        reader.close()
