"""Topic/group/config filters and the Java regex translation (Apache's filter semantics)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import mm2
from mm2.policies.filter import (
    DefaultConfigPropertyFilter,
    DefaultGroupFilter,
    DefaultTopicFilter,
    is_internal_group,
    load_topic_filter,
)
from mm2.policies.java_regex import JavaRegexError, compile_java, translate
from mm2.policies.replication import PolicyConfigError


def topic_filter(**props: str) -> DefaultTopicFilter:
    f = DefaultTopicFilter()
    f.configure({k.replace("_", "."): v for k, v in props.items()})
    return f


def test_default_topic_filter_excludes_internal() -> None:
    f = DefaultTopicFilter()
    assert f.should_replicate_topic("orders")
    for t in ("__consumer_offsets", "x.internal", "x-internal", "x.replica"):
        assert not f.should_replicate_topic(t)


def test_whole_name_match_and_list_join() -> None:
    f = topic_filter(topics="foo, bar.*")
    assert f.should_replicate_topic("foo")
    assert not f.should_replicate_topic("foo1")
    assert f.should_replicate_topic("bar-x")


def test_empty_list_matches_nothing() -> None:
    assert not topic_filter(topics="").should_replicate_topic("anything")


def test_exclude_wins() -> None:
    f = topic_filter(topics="a.*", topics_exclude="ab")
    assert f.should_replicate_topic("ac")
    assert not f.should_replicate_topic("ab")


def test_deprecated_blacklist_and_exclude_precedence() -> None:
    f = DefaultTopicFilter()
    f.configure({"topics.blacklist": "t3"})
    assert not f.should_replicate_topic("t3")
    f.configure({"topics.blacklist": "t3", "topics.exclude": "t4"})
    assert f.should_replicate_topic("t3")
    assert not f.should_replicate_topic("t4")


def test_group_filter_defaults() -> None:
    g = DefaultGroupFilter()
    assert g.should_replicate_group("app")
    for name in ("console-consumer-1", "connect-x", "__g"):
        assert not g.should_replicate_group(name)


def test_config_property_filter() -> None:
    c = DefaultConfigPropertyFilter()
    assert not c.should_replicate_config_property("min.insync.replicas")
    assert c.should_replicate_config_property("retention.ms")
    assert not c.should_replicate_source_default("retention.ms")
    c.configure(
        {"config.properties.exclude": r"delete\.retention\..*", "use.defaults.from": "source"}
    )
    assert not c.should_replicate_config_property("delete.retention.ms")
    assert c.should_replicate_config_property("min.insync.replicas")
    assert c.should_replicate_source_default("retention.ms")


def test_java_class_names_accepted() -> None:
    f = load_topic_filter(
        {"topic.filter.class": "org.apache.kafka.connect.mirror.DefaultTopicFilter"}
    )
    assert isinstance(f, DefaultTopicFilter)


def test_invalid_regex_names_key() -> None:
    with pytest.raises(PolicyConfigError) as err:
        topic_filter(topics="foo[")
    assert err.value.key == "topics"


@pytest.mark.parametrize(
    ("java", "name", "matches"),
    [
        (r"\Qa.b\E", "a.b", True),
        (r"\Qa.b\E", "axb", False),
        (r"\p{Alpha}+\d", "abc1", True),
        (r"\P{Digit}+", "abc", True),
        (r"[\p{Upper}_]+", "AB_C", True),
        (r"a(?i)b|c", "aB", True),
        (r"a(?i)b|c", "C", True),
        (r"a(?i)b|c", "AB", False),
        (r"x\z", "x", True),
        (r"[a[b]]+", "abba", True),
        (r"(?<n>x)\k<n>", "xx", True),
        (r"a*+a", "aaa", False),
        (r"(?>a|ab)c", "abc", False),
        (r"\d", "\u0663", False),
        (r"\w+", "\u00e9", False),
    ],
)
def test_java_regex_semantics(java: str, name: str, matches: bool) -> None:
    assert (compile_java(java).fullmatch(name) is not None) is matches


@pytest.mark.parametrize("bad", ["${x}", "a{", "[a", "(a", "a)", "*a", r"[a&&b]", r"\p{Greek}"])
def test_java_regex_errors(bad: str) -> None:
    with pytest.raises(JavaRegexError):
        compile_java(bad)


def test_translate_passthrough() -> None:
    assert translate(r".*[\-\.]internal") == r".*[\-\.]internal"


def test_mm2s_own_groups_are_internal_and_every_group_id_mm2_names_is_one() -> None:
    """mm2's own groups (the election's, its readers', its copiers') are never checkpointed
    or synced, whatever `groups` says: every `group.id` mm2's code names must match."""
    root = Path(mm2.__file__).parent
    named = set()
    for path in root.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        named.update(re.findall(r'"group\.id": f?"(mm2-[^"{]*)', text))
        named.update(re.findall(r'group(?: or |=)f?"(mm2-[^"{]*)', text))
    assert {"mm2-leader.", "mm2-copier-", "mm2-offsets-reader-", "mm2-lag-"} <= named, named
    for prefix in named:
        assert is_internal_group(prefix + "primary->backup") or is_internal_group(prefix), prefix
    for user in ("orders-app", "mm2-app", "mm2-leaderboard", "payments.mm2-leader"):
        assert not is_internal_group(user), user
