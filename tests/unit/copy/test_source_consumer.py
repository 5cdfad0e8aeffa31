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
