"""A source topic deleted and created again under the same name while it is mirrored (issues 21
and 32): the new topic is copied from its start, each record once, never after the old topic's
position.

Measured before: a topic deleted, re-created and refilled with 6,000 records lost offsets
0-2,999 on the target (the copy task read on at the old topic's position), lag showed 0, and
nothing was logged. Then nothing was lost, but the records the copy task read from the new
topic at the old topic's offsets before the planner's refresh saw the new topic id were copied
again after (3,000 duplicates here). Now the copy task asks the source for the topic's id
before each commit and leaves a topic whose id changed to the planner: 0 duplicates.
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
    # The planner's refresh comes late, so that the copy task reads the new topic at the old
    # topic's position long before the planner sees the new id (where duplicates came from).
    props = write_properties(
        tmp_path,
        primary.bootstrap_servers,
        backup.bootstrap_servers,
        topic,
        "primary->backup.refresh.topics.interval.seconds = 20",
    )
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
    values = [
        r[2]
        for r in read_topic(
            backup.bootstrap_servers, remote, **{"isolation.level": "read_committed"}
        )[0]
    ]
    old = [b"old-%d" % i for i in range(3000)]
    new = [b"new-%d" % i for i in range(6000)]
    assert values[:3000] == old
    copied = values[3000:]
    twice = len(copied) - len(set(copied))
    missing = len(set(new) - set(copied))
    log.info(
        "re-created topic: %d records copied twice, %d missing, copy task saw it first: %s",
        twice,
        missing,
        "copied as" in mirror.log(),
    )
    # Every record of the new topic, from its first, in order, once, after the old topic's.
    assert (twice, missing) == (0, 0), f"{twice} copied twice, {missing} missing"
    assert copied == new
    assert f"source topic {topic} was deleted and created again" in mirror.log()
