"""Changes another site's page makes a browser send are refused (403, nothing changed) before
routing; the mirror's own pages (with X-MM2-Request) and clients that are not browsers (curl,
Connect REST clients: neither Origin nor Sec-Fetch-*) go through; reads are never refused."""

from __future__ import annotations

import base64
import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from mm2.api.app import create_app
from mm2.api.client_headers import CHANGE_HEADERS, REQUEST_HEADER
from mm2.runtime.mirror_maker import MirrorMaker

SOURCE = "primary.backup.MirrorSourceConnector"
OWN = "http://testserver"  # TestClient's scheme and Host header
FORM = {"Content-Type": "application/x-www-form-urlencoded"}


def state(client: TestClient) -> str:
    return str(client.get(f"/connectors/{SOURCE}/status").json()["connector"]["state"])


def assert_refused(answer_status: int, body: dict[str, object], *words: str) -> None:
    assert answer_status == 403, body
    assert body["error_code"] == 403
    message = str(body["message"])
    for word in words:
        assert word in message, message


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "https://evil.example", **FORM},
        {"Origin": "https://evil.example", **CHANGE_HEADERS},  # the header does not save it
        {"Origin": "null", **FORM},
        {"Origin": "http://testserver.evil.example", **FORM},
        {"Origin": "https://testserver", **FORM},  # another scheme is another origin
        {"Origin": "http://testserver:8080", **FORM},  # another port too
        {"Origin": "not a url", **FORM},
    ],
    ids=["foreign", "foreign-with-header", "null", "suffix", "scheme", "port", "malformed"],
)
def test_a_foreign_origin_is_refused_and_changes_nothing(
    client: TestClient, headers: dict[str, str]
) -> None:
    answer = client.put(f"/connectors/{SOURCE}/stop", headers=headers, content=b"a=1")
    assert_refused(answer.status_code, answer.json(), "Origin", headers["Origin"])
    restart = client.post(f"/connectors/{SOURCE}/restart", headers=headers)
    assert_refused(restart.status_code, restart.json(), "Origin")
    assert state(client) == "RUNNING"


@pytest.mark.parametrize("site", ["cross-site", "same-site", "Cross-Site"])
def test_sec_fetch_site_of_another_site_is_refused(client: TestClient, site: str) -> None:
    headers = {"Sec-Fetch-Site": site, "Sec-Fetch-Mode": "navigate", **CHANGE_HEADERS}
    answer = client.put(f"/connectors/{SOURCE}/stop", headers=headers)
    assert_refused(answer.status_code, answer.json(), "Sec-Fetch-Site", site.lower())
    assert state(client) == "RUNNING"


@pytest.mark.parametrize(
    "content_type",
    [
        None,
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "text/plain;charset=UTF-8",
    ],
)
def test_a_browsers_simple_change_without_the_header_is_refused(
    client: TestClient, content_type: str | None
) -> None:
    """Same origin, or no Origin at all but a Sec-Fetch-* header: a browser sent it."""
    for browser in ({"Origin": OWN}, {"Sec-Fetch-Site": "same-origin"}, {"Sec-Fetch-Mode": "cors"}):
        headers = {**browser, **({"Content-Type": content_type} if content_type else {})}
        answer = client.put(f"/connectors/{SOURCE}/stop", headers=headers, content=b"x")
        assert_refused(answer.status_code, answer.json(), REQUEST_HEADER)
    assert state(client) == "RUNNING"


def test_the_own_origin_with_the_header_is_served(client: TestClient) -> None:
    headers = {"Origin": OWN, "Sec-Fetch-Site": "same-origin", **CHANGE_HEADERS}
    assert client.put(f"/connectors/{SOURCE}/stop", headers=headers).status_code == 204
    assert state(client) == "STOPPED"
    # the default port written out is the same origin; any value of the header will do
    headers = {"Origin": "http://TestServer:80", **FORM, REQUEST_HEADER: "yes"}
    assert client.put(f"/connectors/{SOURCE}/resume", headers=headers).status_code == 202
    assert state(client) == "RUNNING"


def test_a_browsers_json_change_needs_no_header(client: TestClient) -> None:
    """A JSON body cannot come from another origin without a CORS preflight, which fails."""
    headers = {"Origin": OWN, "Sec-Fetch-Site": "same-origin"}
    answer = client.put(
        f"/connectors/{SOURCE}/config",
        headers=headers,
        json={**client.get(f"/connectors/{SOURCE}/config").json()},
    )
    assert answer.status_code == 200, answer.text


def test_curl_and_connect_clients_need_no_header(client: TestClient) -> None:
    """No Origin, no Sec-Fetch-*: as Apache Kafka Connect's REST API takes it."""
    assert client.put(f"/connectors/{SOURCE}/stop").status_code == 204
    assert state(client) == "STOPPED"
    assert client.put(f"/connectors/{SOURCE}/resume", headers=FORM).status_code == 202
    assert client.post(f"/connectors/{SOURCE}/restart").status_code == 204
    assert client.post(f"/connectors/{SOURCE}/tasks/0/restart").status_code == 204


@pytest.mark.parametrize("method", ["GET", "HEAD", "OPTIONS"])
def test_reads_are_never_refused(client: TestClient, method: str) -> None:
    headers = {"Origin": "null", "Sec-Fetch-Site": "cross-site", **FORM}
    answer = client.request(method, "/connectors", headers=headers)
    assert answer.status_code != 403
    assert client.get(f"/connectors/{SOURCE}/status", headers=headers).status_code == 200


def test_authentication_comes_first(mirror: MirrorMaker) -> None:
    secured = TestClient(create_app(mirror, credentials={"alice": "wonderland"}))
    foreign = {"Origin": "https://evil.example", **FORM}
    assert secured.post(f"/connectors/{SOURCE}/restart", headers=foreign).status_code == 401
    auth = {"Authorization": "Basic " + base64.b64encode(b"alice:wonderland").decode()}
    answer = secured.post(f"/connectors/{SOURCE}/restart", headers={**foreign, **auth})
    assert answer.status_code == 403
    assert secured.post(f"/connectors/{SOURCE}/restart", headers=auth).status_code == 204


def test_the_openapi_document_declares_the_403_of_changes(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    restart = paths["/connectors/{name}/restart"]["post"]["responses"]
    assert "403" in restart and REQUEST_HEADER in restart["403"]["description"]
    assert "403" not in paths["/connectors"]["get"]["responses"]


def test_the_pages_script_sends_the_header_with_every_change() -> None:
    script = (Path(__file__).parents[3] / "mm2/api/ui/static/app.js").read_text(encoding="utf-8")
    assert f'"{REQUEST_HEADER}": "1"' in script
    calls = re.findall(r"fetch\([^;]*?\{(.*?)\}\)", script, flags=re.S)
    changes = [c for c in calls if "method" in c]
    assert len(changes) >= 3, calls
    for call in changes:
        assert "CHANGE" in call, call
