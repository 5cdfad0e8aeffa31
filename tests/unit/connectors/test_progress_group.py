"""ProgressGroup: the flow's positions committed as a source consumer group's offsets."""

from __future__ import annotations

import logging

import pytest

from mm2.config import load_properties, parse_properties
from mm2.connectors.progress_group import ProgressGroup
from mm2.errors import ConfigError, KafkaClientError
from mm2.records import OffsetAndMetadata, TopicPartition
from tests.support.groups import FakeGroups


def test_commits_the_offset_after_the_last_copied_record_of_routed_topics() -> None:
    admin = FakeGroups()
    progress = ProgressGroup("mirrorgroup", admin, interval_s=60, flow_name="a->b")
    progress.commit({("orders", 0): 41, ("orders", 1): 9, ("gone", 0): 3}, {"orders"})
    assert admin.calls == [{TopicPartition("orders", 0): 42, TopicPartition("orders", 1): 10}]
    # nothing moved: nothing sent; one moved: only it
    progress.commit({("orders", 0): 41, ("orders", 1): 9}, {"orders"})
    progress.commit({("orders", 0): 50, ("orders", 1): 9}, {"orders"})
    assert admin.calls[1:] == [{TopicPartition("orders", 0): 51}]


def test_commits_no_more_often_than_the_interval() -> None:
    admin = FakeGroups()
    progress = ProgressGroup("g", admin, interval_s=5, flow_name="a->b")
    start = 1_000_000.0
    progress._last = start
    progress.maybe_commit({("t", 0): 1}, {"t"}, now=start + 4.9)
    assert admin.calls == []
    progress.maybe_commit({("t", 0): 1}, {"t"}, now=start + 5.0)
    progress.maybe_commit({("t", 0): 2}, {"t"}, now=start + 6.0)
    assert admin.calls == [{TopicPartition("t", 0): 2}]


def test_a_refused_commit_warns_and_is_tried_again(caplog: pytest.LogCaptureFixture) -> None:
    admin = FakeGroups()
    admin.members = True
    progress = ProgressGroup("g", admin, interval_s=1, flow_name="a->b")
    with caplog.at_level(logging.WARNING):
        progress.commit({("t", 0): 7}, {"t"})
        progress.commit({("t", 0): 7}, {"t"})
    warnings = [r for r in caplog.records if "could not commit" in r.getMessage()]
    assert len(warnings) == 1  # the same cause is not repeated at every poll
    assert "the group has members" in warnings[0].getMessage()
    assert "is an old MirrorMaker 1 still consuming in it?" in warnings[0].getMessage()
    admin.members = False
    admin.fail = KafkaClientError("Broker: not authorized (GROUP_AUTHORIZATION_FAILED)")
    with caplog.at_level(logging.WARNING):
        progress.commit({("t", 0): 7}, {"t"})
    assert "GROUP_AUTHORIZATION_FAILED" in caplog.records[-1].getMessage()
    admin.fail = None
    progress.commit({("t", 0): 7}, {"t"})
    assert admin.calls == [{TopicPartition("t", 0): 8}]


def test_start_offsets_are_the_groups_commits() -> None:
    admin = FakeGroups({TopicPartition("t", 0): OffsetAndMetadata(5, "")})
    progress = ProgressGroup("g", admin, interval_s=1, flow_name="a->b")
    assert progress.start_offsets() == {("t", 0): 5}


def test_off_unless_the_flow_names_a_group() -> None:
    base = "clusters = a, b\na.bootstrap.servers = a:9092\nb.bootstrap.servers = b:9092\n"
    base += "a->b.enabled = true\n"
    [flow] = load_properties(parse_properties(base)).enabled_flows
    assert ProgressGroup.for_flow(flow) is None
    text = base + "a->b.progress.group.id = mirrorgroup\nprogress.group.commit.interval.ms = 250\n"
    [flow] = load_properties(parse_properties(text)).enabled_flows
    progress = ProgressGroup.for_flow(flow)
    assert progress is not None
    assert (progress.group, progress._interval_s) == ("mirrorgroup", 0.25)


def test_negative_interval_is_refused() -> None:
    text = "clusters = a, b\na.bootstrap.servers = a:9092\nb.bootstrap.servers = b:9092\n"
    text += "a->b.enabled = true\nprogress.group.commit.interval.ms = -1\n"
    with pytest.raises(ConfigError, match=r"progress\.group\.commit\.interval\.ms"):
        load_properties(parse_properties(text))
