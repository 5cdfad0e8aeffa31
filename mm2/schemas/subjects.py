"""Which subjects a flow copies, and the name each one gets on the target.

Confluent's serializers name a subject after the topic (TopicNameStrategy: `orders-value`,
`orders-key`), after the record (RecordNameStrategy: `com.acme.Order`) or after both
(TopicRecordNameStrategy: `orders-com.acme.Order`). Consumers of a remote topic look up the
subject of the topic they read, so a subject that names a replicated topic is renamed the way
the replication policy renames the topic: `orders-value` -> `primary.orders-value`. A subject
that names no topic keeps its name. A subject of a topic that came from the target (a cycle)
is never copied back.

The split is at the last `-`: a record name (Avro, Protobuf) cannot hold one, a topic can.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from mm2.policies.filter import compile_pattern_list
from mm2.policies.replication import ReplicationPolicy, is_cycle
from mm2.records.schema_ids import RECORD_NAME

__all__ = ["SubjectFilter", "SubjectNaming"]

_TOPIC_SUFFIXES = ("key", "value")


class SubjectNaming:
    """Subject names on the target for one flow (source alias -> target alias).

    `replicated(topic)`: whether the flow copies the topic (its topic filter);
    `is_topic(topic)`: whether the source has such a topic, asked only of a TopicRecordNameStrategy
    candidate, whose suffix could also be part of a plain subject name (default: any).
    """

    def __init__(
        self,
        policy: ReplicationPolicy,
        source: str,
        target: str,
        *,
        replicated: Callable[[str], bool],
        is_topic: Callable[[str], bool] = lambda _topic: True,
    ) -> None:
        self._policy, self._source, self._target = policy, source, target
        self._replicated, self._is_topic = replicated, is_topic

    def topic_of(self, subject: str) -> tuple[str, str] | None:
        """(topic, suffix) when the subject names a topic by one of the two strategies."""
        topic, dash, suffix = subject.rpartition("-")
        if not dash or not topic:
            return None
        if suffix in _TOPIC_SUFFIXES:
            return topic, suffix
        if RECORD_NAME.fullmatch(suffix) and self._is_topic(topic):
            return topic, suffix
        return None

    def target_subject(self, subject: str) -> str | None:
        """The subject's name on the target; None when it must not be copied (its topic
        came from the target)."""
        found = self.topic_of(subject)
        if found is None:
            return subject
        topic, suffix = found
        if is_cycle(self._policy, topic, self._target):
            return None
        if self._policy.is_internal_topic(topic) or not self._replicated(topic):
            return subject
        return f"{self._policy.format_remote_topic(self._source, topic)}-{suffix}"


class SubjectFilter:
    """`schemas` minus `schemas.exclude`: comma lists of (Java) regexes matching whole subject
    names, as `topics` and `topics.exclude` do for topics. Default: every subject."""

    include_key, exclude_key = "schemas", "schemas.exclude"

    def __init__(self, include: str = ".*", exclude: str = "") -> None:
        self._include = compile_pattern_list(self.include_key, include)
        self._exclude = compile_pattern_list(self.exclude_key, exclude)

    @classmethod
    def from_config(cls, config: Mapping[str, str]) -> SubjectFilter:
        """From a connector's map; PolicyConfigError names a list that does not compile."""
        return cls(config.get(cls.include_key, ".*"), config.get(cls.exclude_key, ""))

    def accepts(self, subject: str) -> bool:
        included = self._include is not None and self._include.fullmatch(subject) is not None
        excluded = self._exclude is not None and self._exclude.fullmatch(subject) is not None
        return included and not excluded
