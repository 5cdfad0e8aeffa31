"""Booleans mm2 reads more kindly than Apache: the model of Apache's two readings is checked
against Apache itself (tests/unit/oracle), and loading such a value warns once, naming the file,
line, key, value and Apache's reading."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from mm2.config import load
from mm2.config.leniency import configdef_boolean, java_parse_boolean, java_trim
from mm2.config.values import ValueProblem, parse_bool
from tests.support.apache_oracle import ApacheOracle

VALUES = [
    "true",
    "TRUE",
    "True",
    "false",
    "FALSE",
    "true ",
    " true",
    " true ",
    "true\t",
    "\ttrue",
    "false ",
    "true\u00a0",
    "\u00a0true",
    "true\x01",
    "true\x1f",
    "true\u2003",
    "yes",
    "",
    " ",
    "t",
    "truex",
]
BASE = """clusters = a, b
a.bootstrap.servers = a:9092
b.bootstrap.servers = b:9092
emit.heartbeats.enabled = false
"""


def test_java_trim_drops_up_to_u0020_only() -> None:
    assert java_trim("\x00\x1f a \t\n") == "a"
    assert java_trim("\u00a0a\u2003") == "\u00a0a\u2003"


@pytest.mark.parametrize("value", VALUES)
def test_configdef_reading_is_apaches(apache: ApacheOracle, value: str) -> None:
    java = apache.value("source", "refresh.topics.enabled", value)
    assert java["known"]
    ours = configdef_boolean(value)
    assert (ours is not None) == java["ok"], java.get("error")


@pytest.mark.parametrize("value", VALUES)
def test_parse_boolean_reading_is_apaches(apache: ApacheOracle, value: str) -> None:
    props = {
        "clusters": "a, b",
        "emit.heartbeats.enabled": "false",
        "a->b.enabled": value,
    }
    pairs = apache.resolution(props, "a", "b")["pairs"]
    assert java_parse_boolean(value) == ("a->b" in pairs)


def warnings_for(tmp_path: Path, caplog: pytest.LogCaptureFixture, text: str) -> list[str]:
    path = tmp_path / "mm2.properties"
    path.write_text(BASE + text, encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="mm2.config.loader"):
        load(path)
    return [r.getMessage() for r in caplog.records if "Apache MirrorMaker 2" in r.getMessage()]


def test_a_flow_enabled_with_a_trailing_space_warns_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    found = warnings_for(tmp_path, caplog, "a->b.enabled = true \n")
    assert len(found) == 1
    message = found[0]
    assert message.startswith(f"{tmp_path / 'mm2.properties'}:5: a->b.enabled = 'true ': ")
    assert "mm2 reads it as true" in message
    assert "Apache MirrorMaker 2 reads it as false" in message
    assert "Boolean.parseBoolean" in message


@pytest.mark.parametrize(
    "line",
    [
        "emit.heartbeats.enabled = TRUE \n",
        "b->a.emit.heartbeats.enabled = true\t\n",
        "replication.policy.separator = _\nreplication.policy.internal.topic.separator.enabled"
        " = true \n",
    ],
)
def test_each_key_apache_reads_with_parse_boolean_warns(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, line: str
) -> None:
    assert len(warnings_for(tmp_path, caplog, "a->b.enabled = true\n" + line)) == 1


def test_a_unicode_space_apache_keeps_warns_that_apache_refuses_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    found = warnings_for(
        tmp_path, caplog, "a->b.enabled = true\nrefresh.topics.enabled = true\u00a0\n"
    )
    assert len(found) == 1
    assert "'true\\xa0'" in found[0] and "Apache MirrorMaker 2 refuses it" in found[0]


@pytest.mark.parametrize(
    "line",
    [
        "a->b.enabled = true\n",
        "a->b.enabled = true\nb->a.enabled = false \n",  # both read it as false
        "a->b.enabled = true\nrefresh.topics.enabled = true \n",  # ConfigDef trims it
        "a->b.enabled = true\nsync.topic.acls.enabled = FALSE\n",
    ],
)
def test_readings_that_agree_do_not_warn(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, line: str
) -> None:
    assert warnings_for(tmp_path, caplog, line) == []


@pytest.mark.parametrize("value", VALUES)
def test_mm2_reads_no_value_more_strictly_than_apaches_configdef(value: str) -> None:
    # Where mm2 refuses a value, Apache's ConfigDef refuses it too, or it is a control
    # character Python keeps (mm2 stops at load rather than warn).
    try:
        parse_bool(value)
    except ValueProblem:
        assert configdef_boolean(value) is None or java_trim(value) != value.strip()
