"""recent_syncs on a real broker: the latest few offset syncs of each partition, from the whole
topic or from its tail only (a settle's proof reads the tail of a busy flow's syncs topic)."""

from __future__ import annotations

import uuid

import pytest

from mm2.client.syncs import SyncsLocation, recent_syncs
from mm2.records import OffsetSync
from tests.support.kafka import Cluster, produce

pytestmark = pytest.mark.integration


def _location(cluster: Cluster, topic: str) -> SyncsLocation:
    config = {"bootstrap.servers": cluster.bootstrap_servers}
    return SyncsLocation("primary", dict(config), dict(config), dict(config), topic)


def _upstreams(syncs: list[OffsetSync]) -> list[int]:
    return [s.upstream_offset for s in syncs]


def test_the_latest_syncs_of_each_partition_from_the_whole_topic_or_its_tail(
    primary: Cluster,
) -> None:
    location = _location(primary, f"mm2-offset-syncs.{uuid.uuid4().hex[:8]}.internal")
    location.create_topic(1)
    early = [OffsetSync("idle", 0, i, i) for i in range(10)]  # an idle partition's, long ago
    busy = [OffsetSync("busy", 3, 100 * i, 90 * i) for i in range(1_000)]
    produce(
        primary.bootstrap_servers,
        location.topic,
        ((0, s.to_key_bytes(), s.to_value_bytes()) for s in [*early, *busy]),
    )

    whole = recent_syncs(location, 4, last=None, timeout=60)
    assert whole is not None
    assert _upstreams(whole[("idle", 0)]) == [6, 7, 8, 9]
    assert _upstreams(whole[("busy", 3)]) == [99_600, 99_700, 99_800, 99_900]
    assert [s.downstream_offset for s in whole[("busy", 3)]] == [89_640, 89_730, 89_820, 89_910]

    tail = recent_syncs(location, 4, last=500, timeout=60)
    assert tail is not None
    assert ("idle", 0) not in tail  # older than the tail: left unproven
    assert _upstreams(tail[("busy", 3)]) == [99_600, 99_700, 99_800, 99_900]

    last_two = recent_syncs(location, 1, last=2, timeout=60)
    assert last_two is not None and _upstreams(last_two[("busy", 3)]) == [99_900]


def test_a_syncs_topic_that_does_not_exist_gives_none(primary: Cluster) -> None:
    missing = _location(primary, f"mm2-offset-syncs.{uuid.uuid4().hex[:8]}.internal")
    assert recent_syncs(missing, 4, last=None, timeout=30) is None
