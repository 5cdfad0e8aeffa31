"""The offsets topic guarded (issue 21): one that is not compacted is refused, as Kafka Connect
refuses it, with the topic and the fix named, instead of losing positions to retention."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.kafka import Cluster, create_topic
from tests.support.mirror import MirrorProcess, free_port, write_properties
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration


def test_an_offsets_topic_that_is_not_compacted_is_refused_naming_it(
    primary: Cluster, backup: Cluster, tmp_path: Path
) -> None:
    topic = create_topic(primary, f"guard-{uuid.uuid4().hex[:8]}", partitions=1)
    offsets = create_topic(backup, f"mm2-offsets.{uuid.uuid4().hex[:8]}.internal", partitions=5,
                           config={"cleanup.policy": "delete"})  # fmt: skip
    port = free_port()
    props = write_properties(
        tmp_path, primary.bootstrap_servers, backup.bootstrap_servers, topic,
        f"listeners = http://127.0.0.1:{port}\noffset.storage.topic = {offsets}\n",
    )  # fmt: skip
    api = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30)

    def flow() -> dict[str, Any]:
        try:
            answer = api.get("/flows/primary/backup")
        except httpx.HTTPError:
            return {}
        return dict(answer.json()) if answer.status_code == 200 else {}

    try:
        with MirrorProcess(props) as mirror:
            eventually(
                lambda: flow().get("state") == "FAILED",
                timeout=120,
                what="the flow FAILED on the offsets topic",
                log=lambda: f"{flow()}\n{mirror.log()}",
            )
            cause = str(flow().get("cause"))
            assert offsets in cause and "cleanup.policy" in cause, cause
            assert mirror.stop() == 0
    finally:
        api.close()
