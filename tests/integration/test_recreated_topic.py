"""A source topic deleted and created again under the same name while it is mirrored (issue 21):
the new topic is copied from its start, never after the old topic's position.

Measured before: a topic deleted, re-created and refilled with 6,000 records lost offsets
0-2,999 on the target (the copy task read on at the old topic's position), lag showed 0, and
nothing was logged. Now nothing is lost; records copied at the old offsets before the planner
sees the new topic id come again after (counted in the log line of this test).
"""

from __future__ import annotations

import logging
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from tests.support.kafka import Cluster, count, create_topic, produce_numbered, read_topic
from tests.support.mirror import MirrorProcess, write_properties
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration
log = logging.getLogger(__name__)


def _delete(cluster: Cluster, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.delete_topics([topic], operation_timeout=30)[topic].result(60)


def test_a_topic_deleted_and_created_again_is_copied_from_its_start(
    primary: Cluster, backup: Cluster, tmp_path: Path
) -> None:
    topic = f"again-{uuid.uuid4().hex[:8]}"
    remote = f"primary.{topic}"
    create_topic(primary, topic, partitions=1)
    produce_numbered(primary.bootstrap_servers, topic, b"old", 3000)
    props = write_properties(tmp_path, primary.bootstrap_servers, backup.bootstrap_servers, topic)
    with MirrorProcess(props) as mirror:
        eventually(
            lambda: count(backup.bootstrap_servers, remote) >= 3000,
            timeout=180,
            what="the first topic's 3,000 records",
            log=mirror.log,
        )
        _delete(primary, topic)

        def created() -> bool:
            try:
                create_topic(primary, topic, partitions=1)
            except Exception:  # the deletion is still under way: try again
                time.sleep(1)
                return False
            return True

        eventually(created, timeout=60, what="the topic created again", log=mirror.log)
        produce_numbered(primary.bootstrap_servers, topic, b"new", 6000)
        eventually(
            lambda: count(backup.bootstrap_servers, remote) >= 9000,
            timeout=180,
            what="the new topic's 6,000 records after the old one's 3,000",
            log=mirror.log,
        )
        time.sleep(3)  # time enough to copy anything twice, if it would
        assert mirror.stop() == 0
    values = [r[2] for r in read_topic(backup.bootstrap_servers, remote,
                                       **{"isolation.level": "read_committed"})[0]]  # fmt: skip
    old = [b"old-%d" % i for i in range(3000)]
    new = [b"new-%d" % i for i in range(6000)]
    assert values[:3000] == old
    # Every record of the new topic, from its first, in order, after the old topic's. Until
    # the planner sees the new topic id (its next refresh), the copy task reads on at the old
    # topic's offsets (librdkafka reports nothing when a topic is deleted and created again
    # under an assigned consumer): those records come again after, duplicated, never lost.
    assert values[-6000:] == new, f"missing {len(set(new) - set(values))} of the new records"
    log.info("re-created topic: %d records copied twice", len(values) - 9000)
    assert f"source topic {topic} was deleted and created again" in mirror.log()
