"""The web page, the API docs and the operator's health endpoint on fake plugins (no network).

The page itself runs in headless Chromium in tests/integration/test_ui_browser.py.
"""

from __future__ import annotations

import re

from fastapi.testclient import TestClient

from mm2.api.app import create_app
from mm2.cli.status import render_status
from mm2.runtime.mirror_maker import MirrorMaker
from tests.support.waiting import eventually

USERS = {"alice": "wonderland"}


def test_the_page_and_every_asset_it_loads_are_served_by_the_process(mirror: MirrorMaker) -> None:
    client = TestClient(create_app(mirror))
    page = client.get("/ui")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    loaded = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert loaded, page.text
    for url in loaded:
        assert url.startswith("/"), f"{url} is not served by the mirror"
        assert client.get(url).status_code == 200, url
    assert (
        client.get("/ui/assets/app.js")
        .headers["content-type"]
        .startswith(("application/javascript", "text/javascript"))
    )


def test_the_api_docs_load_nothing_from_elsewhere(mirror: MirrorMaker) -> None:
    client = TestClient(create_app(mirror))
    for path in ("/docs", "/redoc"):
        html = client.get(path).text
        urls = re.findall(r'(?:src|href|url)\s*[:=]\s*["\']([^"\']+)["\']', html)
        assert urls, html
        outside = [u for u in urls if u.startswith(("http:", "https:", "//"))]
        assert not outside, f"{path} loads {outside}"
        for url in urls:
            if url.startswith("/docs-assets/"):
                assert client.get(url).status_code == 200, url


def test_the_page_its_assets_and_the_docs_need_credentials(mirror: MirrorMaker) -> None:
    client = TestClient(create_app(mirror, credentials=USERS))
    for path in ("/ui", "/ui/assets/app.js", "/docs", "/docs-assets/swagger-ui-bundle.js"):
        assert client.get(path).status_code == 401, path
        assert client.get(path, auth=("alice", "wonderland")).status_code == 200, path


def test_flows_health_says_which_flow_is_not_copying_and_why(mirror: MirrorMaker) -> None:
    client = TestClient(create_app(mirror))
    # Copying once the flow's tasks, on threads of their own, run (they then run on).
    eventually(lambda: client.get("/health/flows").status_code == 200, timeout=30, what="copying")
    assert 'mm2_flow_state{cause="",source="primary",state="RUNNING",target="backup"} 1.0' in (
        client.get("/metrics").text
    )
    client.put("/flows/primary/backup/pause")
    answer = client.get("/health/flows")
    assert answer.status_code == 503
    cause = answer.json()["causes"]["primary->backup"]
    assert cause.startswith("PAUSED"), cause
    flow = client.get("/flows/primary/backup").json()
    assert flow["state"] == "PAUSED" and "paused" in flow["cause"]


def test_status_table_has_the_offset_checker_columns() -> None:
    rows = [
        {
            "flow": "a->b",
            "topic": "orders",
            "partition": 1,
            "log_end": 10,
            "position": 7,
            "lag_records": 3,
            "lag_seconds": 1.25,
            "owner": "host copy task 0",
            "state": "RUNNING",
        },
        {
            "flow": "a->b",
            "topic": "orders",
            "partition": 0,
            "log_end": 5,
            "position": None,
            "lag_records": 5,
            "lag_seconds": 0.0,
            "owner": None,
            "state": None,
        },
    ]
    text = render_status(rows, ["a->b: target b: unreachable"])
    lines = text.splitlines()
    assert lines[0].split() == [
        "FLOW",
        "TOPIC",
        "PARTITION",
        "LOG-END",
        "COPIED",
        "LAG",
        "LAG-S",
        "OWNER",
        "STATE",
    ]
    assert lines[1].split()[:6] == ["a->b", "orders", "0", "5", "-", "5"]
    assert "3" in lines[2].split() and "RUNNING" in lines[2]
    assert lines[-1] == "! a->b: target b: unreachable"
