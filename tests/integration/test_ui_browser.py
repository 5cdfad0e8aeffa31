"""The /ui page in headless Chromium (Debian's `chromium`) against a running mirror.

The browser loads the page, runs its script against the REST API, and the DOM it ends with
must show what /flows says; a screenshot is kept in tests/artifacts/ui.png. Without chromium
the test fails (make test installs it with the other Debian packages).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import httpx
import pytest

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
    """The data-* attributes of the page's flow and task rows, and whether it loaded."""

    def __init__(self) -> None:
        super().__init__()
        self.flows: dict[str, str] = {}
        self.tasks: dict[str, str] = {}
        self.loaded = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "body" and found.get("data-loaded") == "true":
            self.loaded = True
        if tag == "tr" and found.get("data-flow"):
            self.flows[found["data-flow"] or ""] = found.get("data-state") or ""
        if tag == "tr" and found.get("data-task"):
            self.tasks[found["data-task"] or ""] = found.get("data-state") or ""


def browse(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run(
            [chromium(), "--headless=new", "--no-sandbox", "--disable-gpu",
             "--disable-dev-shm-usage", f"--user-data-dir={profile}",
             "--virtual-time-budget=8000", "--window-size=1280,1000", *args, url],
            capture_output=True, text=True, timeout=180,
        )  # fmt: skip


def test_the_page_shows_what_flows_says(primary: Any, backup: Any, new_topic: Any,
                                        tmp_path: Path) -> None:  # fmt: skip
    topic = new_topic(primary, 2, prefix="ui")
    port = free_port()
    props = write_properties(tmp_path, primary.bootstrap_servers, backup.bootstrap_servers,
                             topic, f"listeners = http://127.0.0.1:{port}\n")  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    api = httpx.Client(base_url=url, timeout=30)

    def running() -> bool:
        try:
            flows = api.get("/flows").json()
        except httpx.HTTPError:
            return False
        return any(f["state"] == "RUNNING" for f in flows)

    with MirrorProcess(props) as mirror:
        eventually(running, timeout=180, what="a RUNNING flow", log=mirror.log)
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
        ARTIFACTS.mkdir(exist_ok=True)
        shot = ARTIFACTS / "ui.png"
        taken = browse(f"{url}/ui", f"--screenshot={shot}")
        assert taken.returncode == 0 and shot.stat().st_size > 10_000, taken.stderr[-2000:]
        api.close()
        assert mirror.stop() == 0, mirror.log()[-3000:]
