"""The flow's worker keys reach its connectors at start and its offsets reader, though they are
no part of the connector configs the REST API shows (as in Apache's dedicated mode)."""

from __future__ import annotations

from pathlib import Path

from tests.support.api import PROPERTIES, FakeConnector, make_mirror
from tests.support.waiting import eventually

WORKER_KEYS = (
    "offset.storage.replication.factor = 1\n"
    "backup.offset.storage.partitions = 5\n"
    "exactly.once.source.support = disabled\n"
)


def test_connectors_start_with_the_worker_keys(tmp_path: Path) -> None:
    mirror = make_mirror(tmp_path, PROPERTIES + WORKER_KEYS)
    mirror.start()
    try:
        key = "primary->backup|MirrorSourceConnector"
        eventually(lambda: key in FakeConnector.started, timeout=30, what=f"{key} started")
        started = FakeConnector.started[key]
        assert started["offset.storage.replication.factor"] == "1"
        assert started["offset.storage.partitions"] == "5"
        assert started["offset.storage.topic"] == "mm2-offsets.primary.internal"
        assert started["exactly.once.source.support"] == "disabled"
        shown = mirror.connectors.info("primary.backup.MirrorSourceConnector").config
        assert not {k for k in shown if k.startswith("offset.storage.")}
        assert "exactly.once.source.support" not in shown
        for task in mirror.connectors.task_configs("primary.backup.MirrorSourceConnector"):
            assert "offset.storage.replication.factor" not in task
    finally:
        mirror.stop()
