"""Topic, group and config-property filters: Apache MM2's include/exclude regex lists."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Literal

from mm2.policies.java_regex import JavaRegexError, compile_java
from mm2.policies.replication import PolicyConfigError, ReplicationPolicy, is_cycle, load_class

__all__ = [
    "ConfigPropertyFilter",
    "DefaultConfigPropertyFilter",
    "DefaultGroupFilter",
    "DefaultTopicFilter",
    "GroupFilter",
    "TopicFilter",
    "compile_pattern_list",
    "is_internal_group",
    "load_config_property_filter",
    "load_group_filter",
    "load_topic_filter",
    "mirrors_group",
    "parse_list",
    "should_replicate_topic",
]

TOPICS_DEFAULT = ".*"
TOPICS_EXCLUDE_DEFAULT = r".*[\-\.]internal, .*\.replica, __.*"
GROUPS_DEFAULT = ".*"
GROUPS_EXCLUDE_DEFAULT = "console-consumer-.*, connect-.*, __.*"
# The consumer groups of mm2's own clients (the election, its readers and copiers): never
# checkpointed or synced, whatever `groups` says. Each client names its group with one of these
# prefixes (tests/unit/policies check every `group.id` in mm2 against this).
INTERNAL_GROUPS = re.compile(
    r"mm2-(?:leader|leader-check|config-reader|offsets-reader|copier|copy-assignment|log-reader"
    r"|lag|schema-ids|first-record)[.-].+|mm2-record-counter|mm2-positions-rebuild"
)
CONFIG_PROPERTIES_EXCLUDE_DEFAULT = (
    r"follower\.replication\.throttled\.replicas, leader\.replication\.throttled\.replicas, "
    r"message\.timestamp\.difference\.max\.ms, message\.timestamp\.type, "
    r"unclean\.leader\.election\.enable, min\.insync\.replicas"
)
# 3.x spellings, still accepted; the *.exclude name wins when both are set.
DEPRECATED: dict[str, str] = {
    "topics.blacklist": "topics.exclude",
    "groups.blacklist": "groups.exclude",
    "config.properties.blacklist": "config.properties.exclude",
}
UseDefaultsFrom = Literal["source", "target"]
_COMMA = re.compile(r"\s*,\s*")


def parse_list(value: str) -> list[str]:
    """A Kafka ConfigDef LIST: trimmed, split on commas; an empty string is an empty list."""
    trimmed = value.strip()
    return [] if not trimmed else _COMMA.split(trimmed)


def compile_pattern_list(key: str, value: str) -> re.Pattern[str] | None:
    """Items joined by `|` as one Java regex; None (matches nothing) for an empty list."""
    items = parse_list(value)
    if not items:
        return None
    try:
        return compile_java("|".join(items))
    except JavaRegexError as exc:
        raise PolicyConfigError(key, f"{exc}; a comma list of Java regexes is expected") from None


def _matches(pattern: re.Pattern[str] | None, name: str) -> bool:
    return pattern is not None and pattern.fullmatch(name) is not None


def _setting(props: Mapping[str, str], key: str, default: str) -> str:
    if key in props:
        return props[key]
    for old, new in DEPRECATED.items():
        if new == key and old in props:
            return props[old]
    return default


class TopicFilter(ABC):
    def configure(self, props: Mapping[str, str]) -> None:  # noqa: B027 - optional hook
        """Read settings from the connector's string map."""

    @abstractmethod
    def should_replicate_topic(self, topic: str) -> bool: ...


class GroupFilter(ABC):
    def configure(self, props: Mapping[str, str]) -> None:  # noqa: B027 - optional hook
        """Read settings from the connector's string map."""

    @abstractmethod
    def should_replicate_group(self, group: str) -> bool: ...


class ConfigPropertyFilter(ABC):
    def configure(self, props: Mapping[str, str]) -> None:  # noqa: B027 - optional hook
        """Read settings from the connector's string map."""

    @abstractmethod
    def should_replicate_config_property(self, prop: str) -> bool: ...

    def should_replicate_source_default(self, prop: str) -> bool:
        return False


class _IncludeExclude:
    include_key: str
    exclude_key: str
    include_default: str
    exclude_default: str

    def __init__(self) -> None:
        self.include = compile_pattern_list(self.include_key, self.include_default)
        self.exclude = compile_pattern_list(self.exclude_key, self.exclude_default)

    def configure(self, props: Mapping[str, str]) -> None:
        self.include = compile_pattern_list(
            self.include_key, _setting(props, self.include_key, self.include_default)
        )
        self.exclude = compile_pattern_list(
            self.exclude_key, _setting(props, self.exclude_key, self.exclude_default)
        )

    def _passes(self, name: str) -> bool:
        return _matches(self.include, name) and not _matches(self.exclude, name)


def is_internal_group(group: str) -> bool:
    """One of mm2's own consumer groups (INTERNAL_GROUPS)."""
    return INTERNAL_GROUPS.fullmatch(group) is not None


def mirrors_group(group_filter: GroupFilter, group: str) -> bool:
    """The filter's choice, never one of mm2's own groups (its election, readers, copiers)."""
    return not is_internal_group(group) and group_filter.should_replicate_group(group)


class DefaultTopicFilter(_IncludeExclude, TopicFilter):
    """`topics` minus `topics.exclude` (whole-name Java regex match; excludes win)."""

    include_key, exclude_key = "topics", "topics.exclude"
    include_default, exclude_default = TOPICS_DEFAULT, TOPICS_EXCLUDE_DEFAULT

    def should_replicate_topic(self, topic: str) -> bool:
        return self._passes(topic)


class DefaultGroupFilter(_IncludeExclude, GroupFilter):
    """`groups` minus `groups.exclude`."""

    include_key, exclude_key = "groups", "groups.exclude"
    include_default, exclude_default = GROUPS_DEFAULT, GROUPS_EXCLUDE_DEFAULT

    def should_replicate_group(self, group: str) -> bool:
        return self._passes(group)


class DefaultConfigPropertyFilter(ConfigPropertyFilter):
    """Every topic config except `config.properties.exclude`; `use.defaults.from` picks defaults."""

    def __init__(self) -> None:
        key = "config.properties.exclude"
        self.exclude = compile_pattern_list(key, CONFIG_PROPERTIES_EXCLUDE_DEFAULT)
        self.use_defaults_from: UseDefaultsFrom = "target"

    def configure(self, props: Mapping[str, str]) -> None:
        key = "config.properties.exclude"
        self.exclude = compile_pattern_list(
            key, _setting(props, key, CONFIG_PROPERTIES_EXCLUDE_DEFAULT)
        )
        source = props.get("use.defaults.from", "target").strip().lower()
        if source not in ("source", "target"):
            raise PolicyConfigError("use.defaults.from", f"{source!r}: use source or target")
        self.use_defaults_from = "source" if source == "source" else "target"

    def should_replicate_config_property(self, prop: str) -> bool:
        return not _matches(self.exclude, prop)

    def should_replicate_source_default(self, prop: str) -> bool:
        return self.use_defaults_from == "source"


_JAVA = "org.apache.kafka.connect.mirror."


def _load(props: Mapping[str, str], key: str, builtin: type[object], base: type[object]) -> object:
    name = props.get(key, "").strip()
    short = builtin.__name__
    builtin_names = ("", short, _JAVA + short, f"policies.filter.{short}")
    cls = builtin if name in builtin_names else load_class(name, key, base)
    instance = cls()
    configure = getattr(instance, "configure", None)
    if callable(configure):
        configure(props)
    return instance


def load_topic_filter(props: Mapping[str, str]) -> TopicFilter:
    f = _load(props, "topic.filter.class", DefaultTopicFilter, TopicFilter)
    assert isinstance(f, TopicFilter)
    return f


def load_group_filter(props: Mapping[str, str]) -> GroupFilter:
    f = _load(props, "group.filter.class", DefaultGroupFilter, GroupFilter)
    assert isinstance(f, GroupFilter)
    return f


def load_config_property_filter(props: Mapping[str, str]) -> ConfigPropertyFilter:
    key = "config.property.filter.class"
    f = _load(props, key, DefaultConfigPropertyFilter, ConfigPropertyFilter)
    assert isinstance(f, ConfigPropertyFilter)
    return f


def should_replicate_topic(
    topic: str,
    *,
    policy: ReplicationPolicy,
    topic_filter: TopicFilter,
    target_alias: str,
    heartbeats_replication: bool = True,
) -> bool:
    """Apache's shouldReplicateTopic: (filter or heartbeats) and not internal and not a cycle."""
    wanted = topic_filter.should_replicate_topic(topic) or (
        heartbeats_replication and policy.is_heartbeats_topic(topic)
    )
    return (
        wanted and not policy.is_internal_topic(topic) and not is_cycle(policy, topic, target_alias)
    )
