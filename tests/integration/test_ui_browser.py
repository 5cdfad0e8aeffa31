"""The /ui page in headless Chromium (Debian's `chromium`) against a running mirror.

The browser loads the page, runs its script against the REST API, and the DOM it ends with
must show what the API says: the flows, the tasks, each flow's partitions, its consumer groups
with their failover readiness, and charts that start from the history the process kept (they
have points on first load). A screenshot is kept in tests/artifacts/ui.png. Without chromium
the test fails (make test installs it with the other Debian packages).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.kafka import commit_group, produce
from tests.support.mirror import MirrorProcess, free_port, write_properties
from tests.support.waiting import eventually

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    raise AssertionError("chromium is not installed: `make test` installs Debian's chromium")


class Rows(HTMLParser):
    """The data-* attributes of the page's rows and charts, and whether it loaded."""

    def __init__(self) -> None:
        super().__init__()
        self.flows: dict[str, str] = {}
        self.tasks: dict[str, str] = {}
        self.partitions: dict[str, int] = {}  # topic-partition -> lag in records
        self.groups: dict[str, str] = {}  # group -> failover ready, yes or no
        self.groups_read: list[str] = []  # each groups table's data-read
        self.points: dict[str, int] = {}  # chart id -> points drawn
        self.loaded = False
        self._in_template = 0  # the page's <template> rows are no data

    def handle_endtag(self, tag: str) -> None:
        if tag == "template":
            self._in_template -= 1

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "template":
            self._in_template += 1
        if self._in_template:
            return
        found = {k: v or "" for k, v in attrs}
        if tag == "body" and found.get("data-loaded") == "true":
            self.loaded = True
        if tag == "tr" and found.get("data-flow"):
            self.flows[found["data-flow"]] = found.get("data-state", "")
        if tag == "tr" and found.get("data-task"):
            self.tasks[found["data-task"]] = found.get("data-state", "")
        if tag == "tr" and found.get("data-partition"):
            self.partitions[found["data-partition"]] = int(found.get("data-lag") or "-1")
        if tag == "tr" and found.get("data-group"):
            self.groups[found["data-group"]] = found.get("data-ready", "")
        if tag == "table" and "groups" in found.get("class", "").split():
            self.groups_read.append(found.get("data-read", ""))
        if tag == "canvas" and found.get("id"):
            self.points[found["id"]] = int(found.get("data-points") or "0")


def browse(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Chromium's run on the page; one that hangs (headless Chromium sometimes never exits
    on a loaded machine) is killed with its child processes and started again, twice at most."""
    hung: list[str] = []
    for _ in range(3):
        with tempfile.TemporaryDirectory() as profile:
            command = [
                chromium(),
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                f"--user-data-dir={profile}",
                "--virtual-time-budget=8000",
                "--window-size=1280,1000",
                *args,
                url,
            ]
            with subprocess.Popen(
                command,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                start_new_session=True,
            ) as browser:
                try:
                    out, err = browser.communicate(timeout=90)
                except subprocess.TimeoutExpired:
                    os.killpg(browser.pid, signal.SIGKILL)
                    try:
                        hung.append(browser.communicate(timeout=15)[1][-1000:])
                    except subprocess.TimeoutExpired:  # a child outside the group holds a pipe
                        hung.append("(its output stayed open after the kill)")
                    continue
                return subprocess.CompletedProcess(command, browser.returncode, out, err)
    raise AssertionError(f"chromium hung 3 times on {url}; its last words:\n{hung[-1]}")


def test_the_page_shows_what_flows_says(
    primary: Any, backup: Any, new_topic: Any, tmp_path: Path
) -> None:
    topic = new_topic(primary, 2, prefix="ui")
    port = free_port()
    props = write_properties(
        tmp_path,
        primary.bootstrap_servers,
        backup.bootstrap_servers,
        topic,
        f"listeners = http://127.0.0.1:{port}\n",
    )
    url = f"http://127.0.0.1:{port}"
    api = httpx.Client(base_url=url, timeout=30)

    def running() -> bool:
        try:
            flows = api.get("/flows").json()
        except httpx.HTTPError:
            return False
        return any(f["state"] == "RUNNING" for f in flows)

    flow = "/flows/primary/backup"
    group = f"ui-drill-{topic}"

    def copied() -> bool:
        rows = [r for r in api.get(f"{flow}/partitions").json() if r["topic"] == topic]
        return len(rows) == 2 and all(r["lag_records"] == 0 for r in rows)

    def ready() -> bool:
        groups = api.get(f"{flow}/groups/offsets").json()["groups"]
        return any(g["group"] == group and g["ready"] for g in groups)

    def kept() -> bool:
        return len(api.get(f"{flow}/history").json()["points"]) >= 2

    with MirrorProcess(props) as mirror:
        eventually(running, timeout=180, what="a RUNNING flow", log=mirror.log)
        produce(primary.bootstrap_servers, topic, [(i % 2, None, b"%d" % i) for i in range(40)])
        eventually(copied, timeout=120, what="both partitions copied", log=mirror.log)
        commit_group(primary.bootstrap_servers, group, {(topic, 0): 12, (topic, 1): 20})
        eventually(ready, timeout=120, what=f"{group} failover-ready", log=mirror.log)
        eventually(kept, timeout=60, what="two samples of the flow's history", log=mirror.log)
        kept_points = len(api.get(f"{flow}/history").json()["points"])
        dom = browse(f"{url}/ui", "--dump-dom")
        assert dom.returncode == 0, dom.stderr[-3000:]
        rows = Rows()
        rows.feed(dom.stdout)
        assert rows.loaded, f"the page never loaded its data:\n{dom.stdout[-3000:]}"
        truth = {f"{f['source']}->{f['target']}": f["state"] for f in api.get("/flows").json()}
        assert rows.flows == truth, (rows.flows, truth)
        connectors = api.get("/connectors?expand=status").json()
        tasks = {
            f"{name}-{t['id']}": t["state"]
            for name, entry in connectors.items()
            for t in entry["status"]["tasks"]
        }
        assert set(rows.tasks) == set(tasks), (rows.tasks, tasks)
        # the flow's partitions (heartbeats are mirrored too, and keep moving: their lag may
        # differ between two reads), with the lag /partitions says for the test's topic
        every = {f"{r['topic']}-{r['partition']}" for r in api.get(f"{flow}/partitions").json()}
        assert set(rows.partitions) == every, (rows.partitions, every)
        assert rows.partitions[f"{topic}-0"] == rows.partitions[f"{topic}-1"] == 0, rows.partitions
        # its groups, as `mm2 failover --dry-run` judges them
        assert rows.groups_read == ["true"], rows.groups_read
        # (other tests' groups on the shared source come and go: only this one is compared)
        assert rows.groups.get(group) == "yes", rows.groups
        assert set(rows.groups.values()) <= {"yes", "no"}, rows.groups
        # the charts start from what the process kept, then add the page's own points
        for chart in ("lag-chart", "rate-chart"):
            assert rows.points.get(chart, 0) > kept_points, (chart, rows.points, kept_points)
        # buttons only where they apply: pause and restart on the RUNNING flow, none on others
        assert 'data-action="resume"' not in dom.stdout
        ARTIFACTS.mkdir(exist_ok=True)
        shot = ARTIFACTS / "ui.png"
        taken = browse(f"{url}/ui", f"--screenshot={shot}")
        assert taken.returncode == 0 and shot.stat().st_size > 10_000, taken.stderr[-2000:]
        api.close()
        assert mirror.stop() == 0, mirror.log()[-3000:]
