"""CreateTopics requests stay under the controller's partitions-per-request limit."""

from __future__ import annotations

from confluent_kafka.cimpl import NewTopic

from mm2.kafka.topics import _PARTITIONS_PER_REQUEST, _batches


def test_a_thousand_topics_of_ten_partitions_go_in_several_requests() -> None:
    topics = [NewTopic(f"t{i}", num_partitions=10, replication_factor=1) for i in range(1000)]
    batches = _batches(topics)
    assert len(batches) == 10_000 // _PARTITIONS_PER_REQUEST
    assert all(sum(t.num_partitions for t in b) <= _PARTITIONS_PER_REQUEST for b in batches)
    assert [t.topic for b in batches for t in b] == [t.topic for t in topics]


def test_a_topic_larger_than_the_limit_goes_alone() -> None:
    big = NewTopic("big", num_partitions=_PARTITIONS_PER_REQUEST + 1, replication_factor=1)
    small = NewTopic("small", num_partitions=1, replication_factor=1)
    assert [[t.topic for t in b] for b in _batches([small, big, small])] == [
        ["small"],
        ["big"],
        ["small"],
    ]
