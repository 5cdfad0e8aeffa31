"""REST requests as strict as Connect's: bodies of at most 1 MiB, 405 with Allow, and
authentication before anything else on every path (docs and OpenAPI included)."""

from __future__ import annotations

import base64
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

import mm2.api.forward
from mm2.api.app import create_app
from mm2.api.limits import MAX_BODY_BYTES
from mm2.runtime.mirror_maker import MirrorMaker

SOURCE = "primary.backup.MirrorSourceConnector"
USERS = {"alice": "wonderland", "zoë": "pässword"}


def basic(user: str, password: str) -> dict[str, str]:
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


@pytest.fixture
def secured(mirror: MirrorMaker) -> TestClient:
    return TestClient(create_app(mirror, credentials=USERS))


# -- bodies, methods, authentication --
def test_bodies_over_one_mib_get_413(client: TestClient) -> None:
    big = b'{"topics": "' + b"x" * MAX_BODY_BYTES + b'"}'
    headers = {"Content-Type": "application/json"}
    answer = client.put(f"/connectors/{SOURCE}/config", content=big, headers=headers)
    assert answer.status_code == 413 and answer.json()["error_code"] == 413

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it streams
        yield big[: len(big) // 2]
        yield big[len(big) // 2 :]

    streamed = client.put(f"/connectors/{SOURCE}/config", content=chunks(), headers=headers)
    assert streamed.status_code == 413
    assert client.get(f"/connectors/{SOURCE}/config").json()["topics"] == "orders.*"


def test_405_names_every_allowed_method(client: TestClient) -> None:
    answer = client.post(f"/connectors/{SOURCE}/config")
    assert answer.status_code == 405 and answer.json()["error_code"] == 405
    assert answer.headers["allow"] == "GET, PUT, PATCH"
    assert client.delete("/flows").headers["allow"] == "GET, POST"
    assert client.post("/openapi.json").headers["allow"] == "GET, HEAD"


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/no/such/route"),
        ("DELETE", "/flows"),
        ("POST", f"/connectors/{SOURCE}/config"),
        ("GET", "/openapi.json"),
        ("GET", "/docs"),
        ("GET", "/redoc"),
        ("GET", "/metrics"),
        ("GET", "/"),
    ],
)
def test_authentication_comes_first_on_every_path(
    secured: TestClient, method: str, path: str
) -> None:
    for headers in ({}, basic("alice", "rabbit"), basic("eve", "x"), {"Authorization": "Basic !"}):
        answer = secured.request(method, path, headers=headers)
        assert answer.status_code == 401, (headers, answer.text)
        assert answer.headers["www-authenticate"].startswith("Basic")
    allowed = secured.request(method, path, headers=basic("alice", "wonderland"))
    assert allowed.status_code != 401


def test_credentials_are_checked_before_the_body_is_read(secured: TestClient) -> None:
    big = b"x" * (MAX_BODY_BYTES + 1)
    assert secured.post("/flows", content=big).status_code == 401
    allowed = secured.post("/flows", content=big, headers=basic("alice", "wonderland"))
    assert allowed.status_code == 413


def test_utf8_passwords_and_the_openapi_security_scheme(secured: TestClient) -> None:
    doc = secured.get("/openapi.json", headers=basic("zoë", "pässword"))
    assert doc.status_code == 200
    assert doc.json()["components"]["securitySchemes"]["basic"]["scheme"] == "basic"
    assert doc.json()["security"] == [{"basic": []}]


def test_an_empty_users_file_lets_nobody_in(mirror: MirrorMaker) -> None:
    nobody = TestClient(create_app(mirror, credentials={}))
    assert nobody.get("/", headers=basic("alice", "wonderland")).status_code == 401


def test_requests_are_forwarded_only_after_authentication(
    secured: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    routed: list[str] = []

    def route(mirror: MirrorMaker, method: str, path: str) -> tuple[None, bool]:
        routed.append(path)
        return None, True

    monkeypatch.setattr(mm2.api.forward, "route", route)
    assert secured.put("/flows/primary/backup/pause").status_code == 401
    assert routed == []
    answer = secured.put("/flows/primary/backup/pause", headers=basic("alice", "wonderland"))
    assert answer.status_code == 202 and routed == ["/flows/primary/backup/pause"]
