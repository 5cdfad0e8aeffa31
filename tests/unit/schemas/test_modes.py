"""make_writable and ids_back on the wire (httpx.MockTransport): IMPORT or READONLY becomes
READWRITE, READWRITE and a registry without modes are left alone, a refusal is named, a dry
run sends nothing but GETs; what the flow back will do with IDs follows the other registry's
mode."""

from __future__ import annotations

import json

import httpx
import pytest

from mm2.schemas.client import RegistryClient
from mm2.schemas.modes import ids_back, make_writable
from mm2.schemas.settings import RegistrySettings

URL = "http://registry-backup:8081"


class Registry:
    """/mode and /subjects of one registry; `mode` None answers 404 (Apicurio 3.0), `status`
    other than 200 answers every call with it."""

    def __init__(self, mode: str | None, status: int = 200) -> None:
        self.mode, self.status = mode, status
        self.calls: list[str] = []

    def handle(self, request: httpx.Request) -> httpx.Response:
        call = f"{request.method} {request.url.path}"
        self.calls.append(call + (f" {request.content.decode()}" if request.content else ""))
        if self.status != 200:
            return httpx.Response(
                self.status, json={"error_code": self.status * 100 + 1, "message": "Unauthorized"}
            )
        if call == "GET /subjects":
            return httpx.Response(200, json=["orders-value"])
        if self.mode is None:
            return httpx.Response(404, text="Not Found")
        if call == "PUT /mode":
            self.mode = json.loads(request.content)["mode"]
        return httpx.Response(200, json={"mode": self.mode})

    def client(self) -> RegistryClient:
        config = {"schema.registry.url": URL, "schema.registry.requests.per.second": "0"}
        settings = RegistrySettings.from_config(config)
        return RegistryClient(settings, transport=httpx.MockTransport(self.handle))


@pytest.mark.parametrize("before", ["IMPORT", "READONLY"])
def test_import_or_readonly_is_put_in_readwrite_and_said(before: str) -> None:
    registry = Registry(before)
    done = make_writable(registry.client(), name="backup's registry")
    assert registry.mode == "READWRITE"
    assert registry.calls == ["GET /mode", 'PUT /mode {"mode":"READWRITE"}']
    assert done.changed and done.before == before and not done.failed
    assert (
        done.said == f"backup's registry ({URL}): {before} -> READWRITE: producers can "
        "register schemas there now"
    )


def test_readwrite_is_left_as_it_is() -> None:
    registry = Registry("READWRITE")
    done = make_writable(registry.client(), name="backup's registry")
    assert registry.calls == ["GET /mode"]
    assert not done.changed and not done.failed and "READWRITE already" in done.said


def test_a_registry_without_modes_accepts_registrations_as_it_is() -> None:
    registry = Registry(None)
    done = make_writable(registry.client(), name="backup's registry")
    assert registry.calls == ["GET /mode", "GET /subjects"]  # the API answers: not a wrong URL
    assert not done.changed and not done.failed and done.before is None
    assert done.said.endswith("has no modes: it accepts registrations as it is")


def test_a_refused_call_names_the_registry_and_the_cause() -> None:
    registry = Registry("IMPORT", status=401)
    done = make_writable(registry.client(), name="backup's registry")
    assert done.failed and not done.changed
    assert done.said.startswith("backup's registry: not made writable: schema registry " + URL)
    assert "GET /mode: HTTP 401 (error 40101): Unauthorized" in done.said


def test_a_refused_put_says_what_to_do_by_hand() -> None:
    registry = Registry("IMPORT")
    original = registry.handle

    def no_writes(request: httpx.Request) -> httpx.Response:
        if request.method == "PUT":
            return httpx.Response(403, json={"error_code": 40301, "message": "no"})
        return original(request)

    registry.handle = no_writes  # type: ignore[method-assign]
    done = make_writable(registry.client(), name="backup's registry")
    assert done.failed and registry.mode == "IMPORT"
    assert "PUT /mode: HTTP 403" in done.said
    assert done.said.endswith(f'do it yourself: PUT {URL}/mode {{"mode": "READWRITE"}}')


def test_a_dry_run_reads_and_changes_nothing() -> None:
    registry = Registry("IMPORT")
    done = make_writable(registry.client(), name="backup's registry", dry_run=True)
    assert registry.mode == "IMPORT" and registry.calls == ["GET /mode"]
    assert not done.changed and not done.failed
    assert "is IMPORT: would be put in READWRITE" in done.said


@pytest.mark.parametrize(
    ("mode", "status", "said"),
    [
        ("IMPORT", 200, "backup->primary will keep schema IDs: primary's registry"),
        (None, 200, "backup->primary will translate schema IDs: primary's registry"),
        ("READWRITE", 200, f'first pass: PUT {URL}/mode?force=true {{"mode": "IMPORT"}}'),
        ("READONLY", 200, "backup->primary cannot register schemas"),
        ("READWRITE", 401, "backup->primary: the mode of primary's registry not read"),
    ],
)
def test_the_flow_back_keeps_or_translates_ids_as_the_other_registry_says(
    mode: str | None, status: int, said: str
) -> None:
    registry = Registry(mode, status)
    line = ids_back(registry.client(), name="primary's registry", flow_back="backup->primary")
    assert said in line, line
    assert all(call.startswith("GET") for call in registry.calls)  # it never changes a mode
