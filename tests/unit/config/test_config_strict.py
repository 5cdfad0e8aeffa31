"""mm2's value checks agree with Apache's ConfigDefs: every client and connector key mm2 types
is asked of Apache's own classes (tests/support/oracle) with the same values, and both must accept
or refuse alike, except where mm2 is stricter on purpose (listed with the reason)."""

from __future__ import annotations

import pytest

from mm2.config.client_defs import CLIENT_DEFS, Def
from mm2.config.keys import check_bootstrap
from mm2.config.value_types import TYPES
from mm2.config.values import ValueProblem, check_def, connector_def
from tests.support.apache_oracle import ApacheOracle

pytestmark = pytest.mark.system  # Apache's own classes answer: a JVM

VALUES = [
    "",
    " ",
    "0",
    "1",
    "-1",
    "-2",
    "2",
    "9",
    "10",
    "17",
    "22",
    "23",
    "900",
    "901",
    "3600",
    "4999",
    "5000",
    "86400",
    "-131072",
    "-131073",
    "32767",
    "32768",
    "-32769",
    "2147483647",
    "2147483648",
    "-2147483649",
    "9223372036854775807",
    "9223372036854775808",
    "+5",
    "1_000",
    "0x10",
    "1.5",
    "0.5",
    "0.49",
    "0.25",
    "0.26",
    "1.0",
    "1e0",
    "0.5d",
    "NaN",
    "x",
    "true",
    "TRUE",
    " false ",
    "yes",
    "ALL",
    "all",
    "most",
    "Gzip",
    "zip",
]
# Where mm2 refuses what Apache's ConfigDef lets through, and why (Apache fails later, or the
# value cannot work with librdkafka).
STRICTER = {
    "sasl.mechanism": "Apache fails when the client starts; librdkafka knows these five",
    "ssl.keystore.type": "Apache fails when the client starts; librdkafka reads these three",
    "ssl.truststore.type": "Apache fails when the client starts; librdkafka reads these three",
    "auto.offset.reset": "by_duration:<ISO duration> has no librdkafka twin",
    "bootstrap.servers": "the admin's ConfigDef lets an empty list through (bootstrap.controllers "
    "may stand in); an admin without either fails when it starts",
}
# Java class names: Apache loads the class, mm2 cannot (these keys have no librdkafka twin).
UNCHECKED_KINDS = ("class",)


def ours_ok(key: str, value: str, d: Def) -> bool:
    try:
        check_def(key, value, d)
    except ValueProblem:
        return False
    return True


def cases() -> list[tuple[str, str, Def]]:
    out = []
    for role, defs in CLIENT_DEFS.items():
        for key, d in sorted(defs.items()):
            if d.kind not in UNCHECKED_KINDS:
                out.append((role, key, d))
    return out


@pytest.mark.parametrize(
    ("role", "key", "d"), cases(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_client_key_agrees_with_apache(apache: ApacheOracle, role: str, key: str, d: Def) -> None:
    extra = list(d.kind) if isinstance(d.kind, tuple) else []
    extra += [v.upper() for v in extra] + [v.lower() for v in extra] + [f" {v} " for v in extra]
    for value in VALUES + extra:
        java = apache.value(role, key, value)
        assert java["known"], f"{role} has no {key}"
        ours = ours_ok(key, value, d)
        if key in STRICTER and not ours:
            continue
        assert ours == java["ok"], (role, key, value, java.get("error"))


def connector_cases() -> list[tuple[str, str]]:
    out = []
    for key, kind in sorted(TYPES.items()):
        if kind in UNCHECKED_KINDS or kind == "list":
            continue  # lists of Java regexes are compared in test_filters
        for definitions in ("source", "checkpoint", "heartbeat"):
            out.append((definitions, key))
    return out


@pytest.mark.parametrize(("definitions", "key"), connector_cases())
def test_connector_key_agrees_with_apache(apache: ApacheOracle, definitions: str, key: str) -> None:
    d = connector_def(key)
    assert d is not None
    extra = list(d.kind) if isinstance(d.kind, tuple) else []
    extra += [v.upper() for v in extra] + [f" {v} " for v in extra]
    for value in VALUES + extra:
        java = apache.value(definitions, key, value)
        if not java["known"]:
            return  # not this connector's key (or ours: mm2.state.dir, the worker's keys)
        assert ours_ok(key, value, d) == java["ok"], (definitions, key, value, java.get("error"))


@pytest.mark.parametrize(
    "value",
    [
        "localhost:9092",
        "localhost",
        "",
        " , ",
        "127.0.0.1:9092,localhost:9093",
        "localhost:",
        ":9092",
        "[::1]:9092",
        "PLAINTEXT://localhost:9092",
        "localhost:99999",
        "localhost:9092, ",
        "localhost:0",
        "127.0.0.1",
    ],
)
def test_bootstrap_servers_agree_with_apache(apache: ApacheOracle, value: str) -> None:
    # Resolvable names only: Apache also drops names DNS does not know, mm2 leaves that to
    # the client at start (the file may be checked on another host).
    try:
        check_bootstrap(value)
        ours = True
    except ValueProblem:
        ours = False
    assert ours == apache.bootstrap_ok(value), value
