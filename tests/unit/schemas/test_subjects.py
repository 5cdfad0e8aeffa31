"""Subject names on the target through the replication policy, and the subject filter."""

from __future__ import annotations

import pytest

from mm2.policies.replication import (
    DefaultReplicationPolicy,
    IdentityReplicationPolicy,
    PolicyConfigError,
)
from mm2.schemas.subjects import SubjectFilter, SubjectNaming

TOPICS = {"orders", "order-events", "payments", "backup.orders"}


def naming() -> SubjectNaming:
    return SubjectNaming(
        DefaultReplicationPolicy(),
        "primary",
        "backup",
        replicated=lambda topic: topic != "payments",
        is_topic=lambda topic: topic in TOPICS,
    )


@pytest.mark.parametrize(
    ("subject", "expected"),
    [
        # TopicNameStrategy: the remote topic's name, whatever the source has (a topic can be
        # registered before it is created)
        ("orders-value", "primary.orders-value"),
        ("orders-key", "primary.orders-key"),
        ("order-events-value", "primary.order-events-value"),
        ("not-created-yet-value", "primary.not-created-yet-value"),
        # TopicRecordNameStrategy, when the prefix is a topic of the source
        ("orders-com.acme.Order", "primary.orders-com.acme.Order"),
        ("order-events-Created", "primary.order-events-Created"),
        ("unknown-com.acme.Order", "unknown-com.acme.Order"),
        # RecordNameStrategy and plain subjects keep their names
        ("com.acme.Order", "com.acme.Order"),
        ("common.proto", "common.proto"),
        ("my-schema.v2-draft", "my-schema.v2-draft"),
        # a topic the flow does not replicate, or an internal one, names its subject as it is
        ("payments-value", "payments-value"),
        ("mm2-offsets.primary.internal-value", "mm2-offsets.primary.internal-value"),
        # a remote topic of another cluster is renamed again
        ("third.orders-value", "primary.third.orders-value"),
    ],
)
def test_subjects_that_name_a_replicated_topic_follow_it(subject: str, expected: str) -> None:
    assert naming().target_subject(subject) == expected


def test_a_subject_of_a_topic_from_the_target_is_not_copied_back() -> None:
    assert naming().target_subject("backup.orders-value") is None
    assert naming().target_subject("backup.orders-com.acme.Order") is None


def test_identity_policy_keeps_names() -> None:
    same = SubjectNaming(
        IdentityReplicationPolicy(), "primary", "backup", replicated=lambda t: True
    )
    assert same.target_subject("orders-value") == "orders-value"


def test_the_filter_takes_every_subject_by_default_and_excludes_win() -> None:
    assert SubjectFilter().accepts("anything-value")
    chosen = SubjectFilter.from_config(
        {"schemas": "orders-.*, com\\.acme\\..*", "schemas.exclude": ".*-key"}
    )
    assert chosen.accepts("orders-value") and chosen.accepts("com.acme.Order")
    assert not chosen.accepts("orders-key") and not chosen.accepts("payments-value")
    assert not SubjectFilter.from_config({"schemas": ""}).accepts("orders-value")


def test_a_list_that_does_not_compile_names_its_key() -> None:
    with pytest.raises(PolicyConfigError) as caught:
        SubjectFilter.from_config({"schemas.exclude": "orders-(value"})
    assert caught.value.key == "schemas.exclude"
