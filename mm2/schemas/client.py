"""RegistryClient: the calls of Confluent's Schema Registry API that the schema sync makes.

Confluent's own Python client cannot register a schema with its ID and version (what a target
in IMPORT mode needs) and does not honour `Retry-After`, so the sync speaks the REST API itself
over httpx. The same API is served by Confluent Schema Registry, Apicurio Registry (under
`/apis/ccompat/v7`), Karapace and Redpanda; where they differ (Apicurio has no `/mode` and
assigns its own IDs) the answers say so and the sync adapts.

Its settings are Confluent's client keys (mm2.schemas.settings). Every failure is a
SchemaRegistryError naming the registry, the call and the cause.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx

from mm2.errors import MM2Error
from mm2.schemas.polite import RateLimiter, retry_after_seconds
from mm2.schemas.settings import RegistrySettings

__all__ = [
    "Registered",
    "RegistryClient",
    "Schema",
    "SchemaReference",
    "SchemaRegistryError",
    "SchemaVersion",
]

_CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
_RETRIES = 5  # answers of 429/503 waited out before the call fails (retriable)
_LONGEST_WAIT_S = 60.0  # a Retry-After beyond this fails the call (the task polls again)


class SchemaRegistryError(MM2Error):
    """A registry call failed: `url`, `call` (`POST /subjects/x/versions`) and the cause are
    in the message; `status` and `error_code` are the registry's answer (None without one)."""

    kind = "schema-registry"

    def __init__(
        self,
        url: str,
        call: str,
        cause: str,
        *,
        status: int | None = None,
        error_code: int | None = None,
        retriable: bool = False,
        operator: bool = False,
    ) -> None:
        super().__init__(f"schema registry {url}: {call}: {cause}")
        self.url, self.call, self.status, self.error_code = url, call, status, error_code
        self.retriable, self.operator = retriable, operator


@dataclass(frozen=True)
class SchemaReference:
    """A reference as the registry stores it: the name the schema imports (`common.proto`,
    an Avro full name), and the subject and version that hold it."""

    name: str
    subject: str
    version: int


@dataclass(frozen=True)
class Schema:
    """A schema's content, what registries compare: its text, type and references."""

    schema: str
    schema_type: str = "AVRO"  # AVRO, JSON or PROTOBUF
    references: tuple[SchemaReference, ...] = ()

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"schema": self.schema, "schemaType": self.schema_type}
        if self.references:
            body["references"] = [
                {"name": r.name, "subject": r.subject, "version": r.version}
                for r in self.references
            ]
        return body


@dataclass(frozen=True)
class SchemaVersion:
    """One version of a subject: its content and the ID (and GUID, where the registry gives
    one) that records carry."""

    subject: str
    version: int
    id: int
    content: Schema
    guid: str | None = None


@dataclass(frozen=True)
class Registered:
    """What a registration or a lookup answered: the ID, and the version and GUID when given."""

    id: int
    version: int | None = None
    guid: str | None = None


def _quote(subject: str) -> str:
    return quote(subject, safe="")


class RegistryClient:
    """Blocking calls to one registry; one httpx client kept between calls. Not thread-safe:
    each task has its own."""

    def __init__(
        self,
        settings: RegistrySettings,
        *,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.settings = settings
        self._urls = list(settings.urls)
        self._sleep = sleep
        self._limiter = RateLimiter(settings.requests_per_second, sleep=sleep)
        auth = None
        if settings.user_info is not None:
            user, _, password = settings.user_info.partition(":")
            auth = httpx.BasicAuth(user, password)
        self._http = httpx.Client(
            auth=auth,
            timeout=settings.timeout_s,
            verify=settings.ssl_context() or True,
            transport=transport,
            headers={"Accept": _CONTENT_TYPE + ", application/json"},
        )

    @classmethod
    def from_config(cls, config: Mapping[str, str]) -> RegistryClient:
        return cls(RegistrySettings.from_config(config))

    @property
    def url(self) -> str:
        """The URL in use (the first one that answered); credentials are never part of it."""
        return str(httpx.URL(self._urls[0]).copy_with(userinfo=b""))

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> RegistryClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- subjects and versions --
    def subjects(self, *, deleted: bool = False) -> list[str]:
        """Every subject; with `deleted`, the soft-deleted ones too."""
        return [str(s) for s in self._get("/subjects", deleted=deleted) or []]

    def versions(self, subject: str, *, deleted: bool = False) -> list[int]:
        """The subject's version numbers ([] when it has none)."""
        path = f"/subjects/{_quote(subject)}/versions"
        return [int(v) for v in self._get(path, deleted=deleted, missing_ok=True) or []]

    def version(self, subject: str, version: int, *, deleted: bool = True) -> SchemaVersion | None:
        """One version with its content; None when the registry does not show it (Apicurio
        hides the versions of a soft-deleted subject even with `deleted=true`)."""
        path = f"/subjects/{_quote(subject)}/versions/{version}"
        found = self._get(path, deleted=deleted, missing_ok=True)
        if found is None:
            return None
        with self._decoding(f"GET {path}"):
            return SchemaVersion(
                subject=str(found.get("subject", subject)),
                version=int(found.get("version", version)),
                id=int(found["id"]),
                content=_schema(found),
                guid=None if found.get("guid") is None else str(found["guid"]),
            )

    def schema_by_id(self, schema_id: int) -> Schema | None:
        """The content that records with this ID were written with; None if unknown."""
        path = f"/schemas/ids/{schema_id}"
        found = self._get(path, missing_ok=True)
        if found is None:
            return None
        with self._decoding(f"GET {path}"):
            return _schema(found)

    def lookup(self, subject: str, schema: Schema, *, deleted: bool = True) -> Registered | None:
        """The version of `subject` that holds this content (the registry's own comparison);
        None when none does."""
        path = f"/subjects/{_quote(subject)}"
        found = self._call(
            "POST",
            path,
            body=schema.body(),
            params={"deleted": "true"} if deleted else None,
            missing_ok=True,
        )
        if found is None:
            return None
        with self._decoding(f"POST {path}"):
            return _registered(found)

    def register(
        self,
        subject: str,
        schema: Schema,
        *,
        schema_id: int | None = None,
        version: int | None = None,
    ) -> Registered:
        """Register the content under `subject`. With `schema_id` and `version` (a target in
        IMPORT mode keeps them; others ignore or refuse them), the answer's ID says which."""
        body = schema.body()
        if schema_id is not None:
            body["id"] = schema_id
        if version is not None:
            body["version"] = version
        path = f"/subjects/{_quote(subject)}/versions"
        found = self._call("POST", path, body=body)
        with self._decoding(f"POST {path}"):
            registered = _registered(found)
        if registered.version is None and version is not None and schema_id == registered.id:
            return Registered(registered.id, version, registered.guid)
        return registered

    def delete_subject(self, subject: str) -> bool:
        """Soft-delete every version of the subject; False when there was nothing to delete."""
        found = self._call("DELETE", f"/subjects/{_quote(subject)}", missing_ok=True)
        return found is not None

    def delete_version(self, subject: str, version: int) -> bool:
        """Soft-delete one version; False when it was gone already."""
        path = f"/subjects/{_quote(subject)}/versions/{version}"
        return self._call("DELETE", path, missing_ok=True) is not None

    # -- modes and compatibility --
    def mode(self, subject: str | None = None) -> str | None:
        """READWRITE, READONLY, IMPORT...; None when the registry has no modes (Apicurio 3.0)."""
        path = "/mode" if subject is None else f"/mode/{_quote(subject)}"
        found = self._get(path, missing_ok=True)
        return None if found is None else str(found.get("mode"))

    def set_mode(self, mode: str, subject: str | None = None, *, force: bool = False) -> None:
        path = "/mode" if subject is None else f"/mode/{_quote(subject)}"
        params = {"force": "true"} if force else None
        self._call("PUT", path, body={"mode": mode}, params=params)

    def compatibility(self, subject: str | None = None) -> str | None:
        """The compatibility level set globally or on the subject; None where none is set."""
        path = "/config" if subject is None else f"/config/{_quote(subject)}"
        found = self._get(path, missing_ok=True)
        if found is None:
            return None
        level = found.get("compatibilityLevel") or found.get("compatibility")
        return None if level is None else str(level)

    def set_compatibility(self, level: str, subject: str | None = None) -> None:
        path = "/config" if subject is None else f"/config/{_quote(subject)}"
        self._call("PUT", path, body={"compatibility": level})

    def delete_compatibility(self, subject: str) -> None:
        """The subject follows the global level again."""
        self._call("DELETE", f"/config/{_quote(subject)}", missing_ok=True)

    # -- the wire --
    @contextmanager
    def _decoding(self, call: str) -> Iterator[None]:
        """An answer without the fields the API promises is the registry's error, said so."""
        try:
            yield
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise SchemaRegistryError(
                self.url, call, f"an answer that does not parse ({type(exc).__name__}: {exc})"
            ) from None

    def _get(self, path: str, *, deleted: bool = False, missing_ok: bool = False) -> Any:
        params = {"deleted": "true"} if deleted else None
        return self._call("GET", path, params=params, missing_ok=missing_ok)

    def _call(
        self,
        method: str,
        path: str,
        *,
        body: Mapping[str, Any] | None = None,
        params: Mapping[str, str] | None = None,
        missing_ok: bool = False,
    ) -> Any:
        """The answer's JSON; None for a 404 when `missing_ok`. Waits out 429 and 503 as
        `Retry-After` asks (exponential from 0.5 s without one), up to _RETRIES times."""
        call = f"{method} {path}"
        headers = {"Content-Type": _CONTENT_TYPE} if body is not None else None
        for attempt in range(_RETRIES + 1):
            response = self._send(call, method, path, body, params, headers)
            status = response.status_code
            if status in (429, 503) and attempt < _RETRIES:
                wait = retry_after_seconds(response.headers.get("Retry-After"))
                wait = 0.5 * 2**attempt if wait is None else wait
                if wait > _LONGEST_WAIT_S:
                    raise self._error(call, response, f"asks to wait {wait:.0f} s", True)
                self._sleep(wait)
                continue
            if status == 404 and missing_ok:
                return None
            if status >= 400:
                raise self._error(call, response)
            with self._decoding(call):
                return response.json() if response.content else {}
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _send(
        self,
        call: str,
        method: str,
        path: str,
        body: Mapping[str, Any] | None,
        params: Mapping[str, str] | None,
        headers: Mapping[str, str] | None,
    ) -> httpx.Response:
        """One request, to the first URL that connects (the others are tried in turn)."""
        for _ in range(len(self._urls)):
            self._limiter.wait()
            try:
                return self._http.request(
                    method, self._urls[0] + path, json=body, params=params, headers=headers
                )
            except httpx.ConnectError as exc:
                cause = f"cannot connect ({exc})"
                self._urls.append(self._urls.pop(0))
            except httpx.TimeoutException:
                cause = f"no answer within {self.settings.timeout_s:g} s"
                break
            except httpx.HTTPError as exc:
                cause = f"{type(exc).__name__}: {exc}"
                break
        raise SchemaRegistryError(self.url, call, cause, retriable=True)

    def _error(
        self, call: str, response: httpx.Response, cause: str = "", retriable: bool = False
    ) -> SchemaRegistryError:
        status = response.status_code
        code: int | None = None
        message = response.text[:300].strip()
        try:
            answer = response.json()
        except ValueError:
            answer = None
        if isinstance(answer, dict):
            code = answer.get("error_code") if isinstance(answer.get("error_code"), int) else None
            message = str(answer.get("message") or message)
        text = f"HTTP {status}" + (f" (error {code})" if code is not None else "")
        text += f": {cause or message or response.reason_phrase}"
        return SchemaRegistryError(
            self.url,
            call,
            text,
            status=status,
            error_code=code,
            retriable=retriable or status >= 500 or status == 429,
            operator=status in (401, 403),
        )


def _schema(found: Mapping[str, Any]) -> Schema:
    references = tuple(
        SchemaReference(str(r["name"]), str(r["subject"]), int(r["version"]))
        for r in found.get("references") or ()
    )
    return Schema(str(found["schema"]), str(found.get("schemaType") or "AVRO"), references)


def _registered(found: Mapping[str, Any]) -> Registered:
    version, guid = found.get("version"), found.get("guid")
    return Registered(
        int(found["id"]),
        version=None if version is None else int(version),
        guid=None if guid is None else str(guid),
    )
