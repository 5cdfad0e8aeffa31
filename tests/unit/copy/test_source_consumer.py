"""The copy task's source consumer: named as Apache MM2 names its source task's consumer."""

from __future__ import annotations

from typing import Any

import pytest

from mm2.copy import consumer
from mm2.copy.stuck import FetchStates
from mm2.kafka.failure import AuthAlarm
from tests.support.specs import copy_settings, copy_spec


def configs(monkeypatch: pytest.MonkeyPatch, source: dict[str, str]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    monkeypatch.setattr(consumer, "Consumer", lambda config: seen.update(config) or seen)
    spec = copy_spec(task=3, settings=copy_settings(source_consumer=source))
    consumer.source_consumer(spec, AuthAlarm("primary"), FetchStates())
    return seen


def test_the_client_id_is_apache_s(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = configs(monkeypatch, {"bootstrap.servers": "localhost:9092"})
    assert seen["client.id"] == "primary->backup|MirrorSourceConnector-3|replication-consumer"
    assert seen["client.id"] == consumer.replication_client_id("primary->backup", 3)


def test_the_operator_s_client_id_comes_first(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = configs(monkeypatch, {"bootstrap.servers": "localhost:9092", "client.id": "dc1"})
    assert seen["client.id"] == "dc1|primary->backup|MirrorSourceConnector-3|replication-consumer"


def test_a_fetch_waits_up_to_5_ms_for_a_megabyte_unless_the_operator_says(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen = configs(monkeypatch, {"bootstrap.servers": "localhost:9092"})
    assert (seen["fetch.wait.max.ms"], seen["fetch.min.bytes"]) == (5, 1_000_000)
    assert consumer.fetch_pause_ms({}) == 5
    # Either key of the operator's replaces both: librdkafka's default for the other.
    own = configs(monkeypatch, {"bootstrap.servers": "localhost:9092", "fetch.min.bytes": "1"})
    assert own["fetch.min.bytes"] == "1"
    assert "fetch.wait.max.ms" not in own
    assert consumer.fetch_pause_ms({"fetch.min.bytes": "1"}) == 0  # answered at once
    assert consumer.fetch_pause_ms({"fetch.wait.max.ms": "20"}) == 0
    assert consumer.fetch_pause_ms({"fetch.min.bytes": "65536"}) == 500
    assert consumer.fetch_pause_ms({"fetch.min.bytes": "65536", "fetch.wait.max.ms": "20"}) == 20
