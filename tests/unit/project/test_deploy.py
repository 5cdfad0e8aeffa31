"""deploy/: the Prometheus alert rules pass promtool (syntax, and their own unit tests on
made-up series), the Grafana dashboard's queries parse, and every metric either of them asks
for is one the mirror really exports on /metrics.

promtool comes from Debian's prometheus package (`make promtool` installs it); without it
these tests fail rather than skip.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from mm2.api.metrics import metrics_registry
from tests.support.api import make_mirror
from tests.support.paths import REPO

DEPLOY = REPO / "deploy"
RULES = DEPLOY / "prometheus" / "alerts.yml"
DASHBOARD = DEPLOY / "grafana" / "mm2-dashboard.json"
# Series Prometheus makes itself, not the mirror.
PROMETHEUS_OWN = {"up"}
_KEYWORDS = {
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "bool",
    "and",
    "or",
    "unless",
    "offset",
    "inf",
    "nan",
}


def promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        pytest.fail("promtool is not installed: run `make promtool` (Debian's prometheus package)")
    return found


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([promtool(), *args], capture_output=True, text=True, timeout=120)


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression selects (a function call is a name before '(')."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # string literals
    text = re.sub(r"\{[^}]*\}", " ", text)  # label matchers
    text = re.sub(r"\[[^\]]*\]", " ", text)  # ranges
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)
    names = set()
    for match in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", text):
        following = text[match.end() :].lstrip()
        name = match.group(0)
        if following.startswith("(") or name.lower() in _KEYWORDS:
            continue
        names.add(name)
    return names


def rule_expressions() -> list[str]:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return [rule["expr"] for group in groups for rule in group["rules"]]


def _panels(panels: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for panel in panels:
        yield panel
        yield from _panels(panel.get("panels", []))


def dashboard() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return loaded


def dashboard_expressions() -> list[str]:
    exprs = [t["expr"] for p in _panels(dashboard()["panels"]) for t in p.get("targets", [])]
    for variable in dashboard()["templating"]["list"]:
        query = variable.get("definition", "")
        found = re.fullmatch(r"label_values\((\w+),\s*\w+\)", query)
        if found:
            exprs.append(found.group(1))
    return exprs


@pytest.fixture
def exported(tmp_path: Path) -> Iterator[set[str]]:
    """Every metric name /metrics serves. A family is described (HELP, TYPE) even before it has
    samples, so a fresh mirror shows them all; a counter's samples end in _total."""
    mirror = make_mirror(tmp_path)
    mirror.start()
    try:
        text = generate_latest(metrics_registry(mirror)).decode()
    finally:
        mirror.stop()
    names = set()
    for family in text_string_to_metric_families(text):
        names.add(family.name)
        if family.type == "counter":
            names.add(family.name + "_total")
        names.update(sample.name for sample in family.samples)
    yield names


@pytest.mark.system
def test_alert_rules_pass_promtool_check() -> None:
    result = _run("check", "rules", str(RULES))
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.system
def test_alert_rules_fire_when_they_should_and_only_then() -> None:
    result = _run("test", "rules", str(RULES.with_name("alerts.test.yml")))
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.system
def test_the_example_prometheus_config_is_valid() -> None:
    result = _run("check", "config", str(RULES.with_name("prometheus.yml")))
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.system
def test_dashboard_queries_are_valid_promql(tmp_path: Path) -> None:
    """promtool parses the dashboard's queries as recording rules (Grafana's variables made
    concrete first)."""
    rules = []
    for n, expr in enumerate(dashboard_expressions()):
        concrete = expr.replace("$__rate_interval", "1m")
        concrete = re.sub(r"\$\w+", "x", concrete)
        rules.append({"record": f"mm2:dashboard_{n}", "expr": concrete})
    path = tmp_path / "dashboard-rules.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    result = _run("check", "rules", str(path))
    assert result.returncode == 0, result.stdout + result.stderr


def test_dashboard_covers_what_an_operator_watches() -> None:
    board = dashboard()
    assert board["uid"] and board["title"]
    titles = " ".join(p["title"].lower() for p in _panels(board["panels"]))
    for topic in ("lag", "throughput", "latency", "task", "heartbeat", "checkpoint", "memory"):
        assert topic in titles
    for panel in _panels(board["panels"]):
        if panel["type"] != "row":
            assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
            assert panel["targets"], panel["title"]


def test_every_metric_the_rules_and_dashboard_query_is_exported(exported: set[str]) -> None:
    wanted: dict[str, str] = {}
    for expr in rule_expressions():
        wanted.update(dict.fromkeys(metric_names(expr), "alerts.yml"))
    for expr in dashboard_expressions():
        wanted.update(dict.fromkeys(metric_names(expr), "mm2-dashboard.json"))
    assert "mm2_replication_lag_records" in wanted  # the parser finds names at all
    missing = {n: where for n, where in wanted.items() if n not in exported | PROMETHEUS_OWN}
    assert not missing, f"queried but not exported: {missing}"


def test_the_metrics_reference_lists_the_metrics_the_rules_use(exported: set[str]) -> None:
    reference = (DEPLOY.parent / "docs" / "rest-api.md").read_text()
    for expr in rule_expressions():
        for name in metric_names(expr) - PROMETHEUS_OWN:
            assert name.removesuffix("_total") in reference, name


def test_metric_name_parser() -> None:
    expr = 'sum by (source) (rate(a_total{x="y(z)"}[5m])) > 0 unless on (source) b == 1'
    assert metric_names(expr) == {"a_total", "b"}
