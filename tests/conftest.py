"""What every test run shares: the support plugins (fixtures in tests/support/), the rule
that a run in which every integration test was skipped fails, and the order in which `make
test`'s two lanes take the modules.

Fixtures: `primary`, `backup`, `cluster_pair`, `new_topic`, `new_group`
(tests.support.clusters), `mirror` and `client` for the REST tests (tests.support.api), `apache`
(tests.support.apache_oracle), `registries` (two Apicurio servers, tests.support.registry).
"""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

from mm2.localcluster import C1_ONLY

# Every Spark driver the tests start (the mirrors' processes inherit this; Spark's launcher adds
# it to the driver's java options) compiles with C1 only, as the brokers of mm2.localcluster do:
# a mirror in a test lives for seconds to minutes. Measured on test_versions, with the brokers
# already on C1: 12 % less of the machine's CPU.
os.environ.setdefault("SPARK_SUBMIT_OPTS", C1_ONLY)

# Property tests assert no duration: hypothesis's per-example deadline (200 ms) failed examples
# on a loaded 2-core machine that were right, only slow.
settings.register_profile("mm2", deadline=None)
settings.load_profile("mm2")

pytest_plugins = [
    "tests.support.clusters",
    "tests.support.api",
    "tests.support.apache_oracle",
    "tests.support.registry",
]


# -- a run in which every integration test was skipped is a failure ---------------------------

# Module state is fine here: pytest loads this conftest once per process. Counted from the
# test reports, which pytest-xdist's workers send to the controller (`make test` runs two
# lanes): the controller collects nothing itself, so only what it is told counts.
_marked: set[str] = set()
_reached: set[str] = set()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if "integration" not in report.keywords:
        return
    _marked.add(report.nodeid)
    if (report.when == "call" and not report.skipped) or report.failed:
        _reached.add(report.nodeid)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _marked and not _reached:
        message = (
            f"all {len(_marked)} integration tests were skipped: brokers must run in this "
            "session (a skipped broker test is a failure, see tests/conftest.py)"
        )
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(f"ERROR: {message}", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


# -- two lanes that end together ------------------------------------------------------------

# `make test` runs its tests in two processes (pytest-xdist, `-n 2 --dist loadfile`: a module's
# tests stay together, with the clusters it starts), each taking the next module when done. The
# longest modules go first (by the durations `make test` prints), so that no long module starts
# when the other lane is nearly done.
LONGEST_FIRST = (
    "test_spark_cluster",
    "test_apache_takeover",
    "test_soak",
    "test_target_restarts",
    "test_mirror_source",
    "test_operator_truth",
    "test_log_rate",
    "test_self_healing",
    "test_copy_assignment",
    "test_bench_smoke",
    "test_standby",
    "test_failover",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.stem, len(rank)))
