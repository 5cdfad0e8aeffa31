"""RecordProducer gives up on a producer whose records wait without an acknowledgement (a client
stuck without a partition's leader sends nothing again: only a new producer does)."""

from __future__ import annotations

import time

import pytest

from mm2.errors import KafkaClientError
from mm2.kafka import producer as producer_module
from mm2.kafka.producer import RecordProducer


def test_records_waiting_too_long_without_an_acknowledgement_raise_once_per_stall(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(producer_module, "STALLED_S", 0.3)
    nobody = RecordProducer({"bootstrap.servers": "127.0.0.1:9", "message.timeout.ms": 600_000})
    try:
        nobody.raise_failure()  # nothing waits: nothing to say
        time.sleep(0.5)
        nobody.raise_failure()  # still nothing waits, however long
        nobody.send("mm2-offset-syncs.backup.internal", b"k", b"v")
        nobody.raise_failure()  # waiting, not for long yet
        time.sleep(0.5)
        with pytest.raises(KafkaClientError, match=r"1 records waiting .* new producer") as caught:
            nobody.raise_failure()
        assert caught.value.retriable
        nobody.raise_failure()  # said once; its clock starts again
    finally:
        nobody.close(0.1)
