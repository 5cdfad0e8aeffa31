"""What every test run shares: the support plugins (fixtures in tests/support/), and the rule
that a run in which every integration test was skipped fails.

Fixtures: `primary`, `backup`, `cluster_pair`, `new_topic`, `new_group`
(tests.support.clusters), `mirror` and `client` for the REST tests (tests.support.api), `apache`
(tests.support.apache_oracle).
"""

from __future__ import annotations

import pytest

pytest_plugins = [
    "tests.support.clusters",
    "tests.support.api",
    "tests.support.apache_oracle",
]


# -- a run in which every integration test was skipped is a failure ---------------------------

# Module state is fine here: pytest loads this conftest once per run.
_marked: set[str] = set()
_reached: set[str] = set()


def pytest_collection_finish(session: pytest.Session) -> None:
    _marked.clear()
    _marked.update(i.nodeid for i in session.items if i.get_closest_marker("integration"))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    body_ran = report.when == "call" and not report.skipped
    if report.nodeid in _marked and (body_ran or report.failed):
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
