"""RegistryClient on the wire (httpx.MockTransport): waits out 429 and 503 as `Retry-After`
asks, says which registry, call and cause failed, and reads Confluent-style settings."""

from __future__ import annotations

import base64
from collections.abc import Callable

import httpx
import pytest

from mm2.errors import ConfigError
from mm2.schemas.client import RegistryClient, Schema, SchemaRegistryError
from mm2.schemas.settings import RegistrySettings

URL = "http://registry.example:8081"


def client(
    handler: Callable[[httpx.Request], httpx.Response],
    slept: list[float] | None = None,
    config: dict[str, str] | None = None,
) -> RegistryClient:
    settings = RegistrySettings.from_config(
        {"schema.registry.url": URL, "schema.registry.requests.per.second": "0", **(config or {})}
    )
    sleep = slept.append if slept is not None else lambda _s: None
    return RegistryClient(settings, transport=httpx.MockTransport(handler), sleep=sleep)


def answers(*responses: httpx.Response) -> Callable[[httpx.Request], httpx.Response]:
    queue = list(responses)
    return lambda _request: queue.pop(0)


def test_429_and_503_are_waited_out_as_retry_after_asks() -> None:
    slept: list[float] = []
    busy = httpx.Response(429, headers={"Retry-After": "3"}, json={"error_code": 42901})
    down = httpx.Response(503)  # no Retry-After: 0.5 s, then twice that
    handler = answers(busy, down, down, httpx.Response(200, json=["orders-value"]))
    assert client(handler, slept).subjects() == ["orders-value"]
    assert slept == [3.0, 1.0, 2.0]


def test_a_registry_that_stays_busy_fails_the_call_retriably() -> None:
    slept: list[float] = []
    busy = client(lambda _r: httpx.Response(429, headers={"Retry-After": "1"}), slept)
    with pytest.raises(SchemaRegistryError) as caught:
        busy.subjects()
    assert caught.value.retriable and caught.value.status == 429
    assert slept == [1.0] * 5
    later = client(answers(httpx.Response(429, headers={"Retry-After": "600"})))
    with pytest.raises(SchemaRegistryError, match="asks to wait 600 s") as caught:
        later.subjects()
    assert caught.value.retriable


def test_an_error_names_the_registry_the_call_and_the_cause_without_httpx_internals() -> None:
    refused = httpx.Response(422, json={"error_code": 42201, "message": "Invalid schema"})
    with pytest.raises(SchemaRegistryError) as caught:
        client(answers(refused)).register("orders value", Schema('"string"'))
    error = caught.value
    assert str(error) == (
        f"schema registry {URL}: POST /subjects/orders%20value/versions: "
        "HTTP 422 (error 42201): Invalid schema"
    )
    assert (error.status, error.error_code, error.retriable, error.operator) == (
        422,
        42201,
        False,
        False,
    )
    assert error.__cause__ is None and error.__context__ is None


def test_credentials_refused_are_for_an_operator_and_a_server_error_is_retried() -> None:
    with pytest.raises(SchemaRegistryError) as caught:
        client(answers(httpx.Response(401, text="Unauthorized"))).subjects()
    assert caught.value.operator and "HTTP 401: Unauthorized" in str(caught.value)
    with pytest.raises(SchemaRegistryError) as caught:
        client(answers(httpx.Response(500, text="boom"))).subjects()
    assert caught.value.retriable and not caught.value.operator


def test_the_next_url_is_tried_when_one_does_not_connect() -> None:
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.host)
        if request.url.host == "down.example":
            raise httpx.ConnectError("Connection refused")
        return httpx.Response(200, json=[])

    both = client(handler, config={"schema.registry.url": f"http://down.example:1,{URL}"})
    assert both.subjects() == [] and both.subjects() == []
    assert seen == ["down.example", "registry.example", "registry.example"]
    with pytest.raises(SchemaRegistryError, match="cannot connect") as caught:
        client(handler, config={"schema.registry.url": "http://down.example:1"}).subjects()
    assert caught.value.retriable and caught.value.__context__ is None


def test_missing_things_are_none_not_errors() -> None:
    missing = httpx.Response(404, json={"error_code": 40401, "message": "Subject not found"})
    registry = client(lambda _r: missing)
    assert registry.versions("nope") == []
    assert registry.version("nope", 1) is None
    assert registry.lookup("nope", Schema('"string"')) is None
    assert registry.mode() is None and registry.compatibility("nope") is None


def test_an_answer_that_does_not_parse_is_the_registry_s_error() -> None:
    with pytest.raises(SchemaRegistryError, match="does not parse"):
        client(answers(httpx.Response(200, json={"no": "id"}))).version("orders-value", 1)


def test_basic_auth_from_user_info_and_a_url_without_its_credentials() -> None:
    headers: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        headers.append(request.headers.get("Authorization", ""))
        return httpx.Response(200, json=[])

    registry = client(handler, config={"schema.registry.basic.auth.user.info": "mirror:s3cret"})
    registry.subjects()
    assert headers == ["Basic " + base64.b64encode(b"mirror:s3cret").decode()]
    in_url = client(
        handler,
        config={
            "schema.registry.url": "https://mirror:s3cret@r.example/api",
            "basic.auth.credentials.source": "URL",
        },
    )
    assert in_url.url == "https://r.example/api"
    in_url.subjects()  # the credentials go as a header, never in a URL a log line may show
    assert headers[-1] == headers[0]
    assert in_url.settings.urls == ("https://r.example/api",)
    assert "s3cret" not in repr(in_url.settings)


@pytest.mark.parametrize(
    ("settings", "key"),
    [
        ({"schema.registry.url": "registry:8081"}, "schema.registry.url"),
        ({}, "schema.registry.url"),
        (
            {"schema.registry.url": URL, "basic.auth.credentials.source": "SASL_INHERIT"},
            "basic.auth.credentials.source",
        ),
        (
            {"schema.registry.url": URL, "basic.auth.user.info": "nopassword"},
            "basic.auth.user.info",
        ),
        (
            {"schema.registry.url": URL, "schema.registry.requests.per.second": "lots"},
            "schema.registry.requests.per.second",
        ),
        (
            {"schema.registry.url": URL, "schema.registry.ssl.ca.location": "/nonexistent/ca.pem"},
            "schema.registry.ssl.ca.location",
        ),
    ],
)
def test_settings_that_cannot_work_name_their_key(settings: dict[str, str], key: str) -> None:
    with pytest.raises(ConfigError) as caught:
        RegistrySettings.from_config(settings).ssl_context()
    assert caught.value.key == key


def test_settings_read_with_or_without_the_prefix() -> None:
    settings = RegistrySettings.from_config(
        {
            "schema.registry.url": f"{URL}/, http://other:8081",
            "basic.auth.user.info": "u:p",
            "schema.registry.timeout.ms": "2500",
        }
    )
    assert settings.urls == (URL, "http://other:8081")
    assert (settings.user_info, settings.timeout_s, settings.requests_per_second) == (
        "u:p",
        2.5,
        50.0,
    )
