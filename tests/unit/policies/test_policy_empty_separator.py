"""`replication.policy.separator =` (empty) means what it means to Apache: Apache's own
DefaultReplicationPolicy is the oracle, and files that use it to keep topic names load."""

from __future__ import annotations

from pathlib import Path

import pytest

from mm2.config import load
from mm2.policies.replication import load_replication_policy
from tests.support.apache_oracle import ApacheOracle

TOPICS = [
    "orders",
    "o",
    "",
    "ab",
    "primaryorders",
    "heartbeats",
    "primaryheartbeats",
    "a.b",
    "_x",
    "checkpointsinternal",
    "primarycheckpointsinternal",
    "mm2-offset-syncsbinternal",
]
SETTINGS = [
    {"replication.policy.separator": ""},
    {"replication.policy.separator": "", "source.cluster.alias": ""},
    {
        "replication.policy.separator": "",
        "replication.policy.internal.topic.separator.enabled": "false",
    },
    {"replication.policy.separator": "__"},
]


@pytest.mark.system
@pytest.mark.parametrize("settings", SETTINGS, ids=lambda s: repr(sorted(s.items())))
def test_policy_names_topics_as_apache_does(apache: ApacheOracle, settings: dict[str, str]) -> None:
    policy = load_replication_policy(settings)
    alias = settings.get("source.cluster.alias", "a")
    for topic in TOPICS:
        java = apache.policy(settings, topic)
        ours = {
            "remote": policy.format_remote_topic(alias, topic),
            "source": policy.topic_source(topic),
            "upstream": policy.upstream_topic(topic),
            "original": policy.original_topic(topic),
            "heartbeats": policy.is_heartbeats_topic(topic),
            "checkpoints": policy.is_checkpoints_topic(topic),
            "offset_syncs_topic": policy.offset_syncs_topic(topic),
            "checkpoints_topic": policy.checkpoints_topic(topic),
        }
        assert ours == java, topic


def test_empty_separator_keeps_topic_names(tmp_path: Path) -> None:
    # The shape of three real-world files: no separator and no source alias, so that
    # "" + "" + "orders" names the remote topic "orders".
    path = tmp_path / "mm2.properties"
    path.write_text(
        "clusters = source, cloud\nsource.bootstrap.servers = s:9092\n"
        "cloud.bootstrap.servers = c:9092\nsource->cloud.enabled = true\n"
        "replication.policy.separator =\nsource.cluster.alias =\ntarget.cluster.alias =\n",
        encoding="utf-8",
    )
    flow = load(path).flow("source", "cloud")
    config = flow.connector_config()
    assert config["replication.policy.separator"] == ""
    policy = flow.replication_policy()
    assert policy.format_remote_topic(config["source.cluster.alias"], "orders") == "orders"
    assert policy.checkpoints_topic(config["source.cluster.alias"]) == "checkpointsinternal"
