"""A Confluent Schema Registry in memory, behind httpx.MockTransport, for the IMPORT-mode path.

No registry that keeps IDs installs here (Apicurio ignores them), so the rules of Confluent's
IMPORT mode are played by this fake, as docs/architecture.md states them: a registration with
`id` and `version` is accepted only in IMPORT mode, and in IMPORT mode only with them; an ID
already used for other content is refused; references must exist first. Outside IMPORT mode
the registry assigns the next free ID. `ignores_ids` plays a registry that answers IMPORT but
numbers schemas its own way anyway.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

import httpx


@dataclass
class Version:
    id: int
    schema: dict[str, Any]
    deleted: bool = False


@dataclass
class FakeRegistry:
    mode: str | None = "READWRITE"  # None: no /mode endpoint (as Apicurio 3.0)
    ignores_ids: bool = False
    strict: bool = False  # refuse (409) a second version unless the subject's level is NONE
    subjects: dict[str, dict[int, Version]] = field(default_factory=dict)
    contents: dict[int, dict[str, Any]] = field(default_factory=dict)
    levels: dict[str | None, str] = field(default_factory=lambda: {None: "BACKWARD"})
    writes: list[str] = field(default_factory=list)
    next_id: int = 1000

    def client_transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handle)

    # -- what a test sets up on the source side --
    def add(self, subject: str, schema_id: int, schema: str, **extra: Any) -> None:
        versions = self.subjects.setdefault(subject, {})
        content = {"schema": schema, "schemaType": "AVRO", "references": [], **extra}
        versions[len(versions) + 1] = Version(schema_id, content)
        self.contents[schema_id] = content

    # -- the API --
    def handle(self, request: httpx.Request) -> httpx.Response:
        path = unquote(request.url.raw_path.decode().split("?")[0])
        deleted = request.url.params.get("deleted") == "true"
        body = json.loads(request.content) if request.content else None
        if request.method != "GET":
            self.writes.append(f"{request.method} {path}")
        for pattern, method in self._routes():
            found = re.fullmatch(pattern, path)
            if found and request.method == method.__name__.split("_")[1].upper():
                response: httpx.Response = method(*found.groups(), deleted=deleted, body=body)
                return response
        return _error(404, 404, f"no route {request.method} {path}")

    def _routes(self) -> list[tuple[str, Any]]:
        return [
            (r"/subjects", self._get_subjects),
            (r"/subjects/([^/]+)/versions", self._get_versions),
            (r"/subjects/([^/]+)/versions", self._post_versions),
            (r"/subjects/([^/]+)/versions/(\d+)", self._get_version),
            (r"/subjects/([^/]+)", self._post_lookup),
            (r"/mode", self._get_mode),
            (r"/config", self._get_config),
            (r"/config/([^/]+)", self._get_config),
            (r"/config", self._put_config),
            (r"/config/([^/]+)", self._put_config),
            (r"/config/([^/]+)", self._delete_config),
            (r"/schemas/ids/(\d+)", self._get_schema),
        ]

    def _get_subjects(self, *, deleted: bool, body: Any) -> httpx.Response:
        return _ok(
            [
                s
                for s, vs in self.subjects.items()
                if deleted or any(not v.deleted for v in vs.values())
            ]
        )

    def _get_versions(self, subject: str, *, deleted: bool, body: Any) -> httpx.Response:
        if subject not in self.subjects:
            return _error(404, 40401, f"Subject '{subject}' not found.")
        return _ok([n for n, v in self.subjects[subject].items() if deleted or not v.deleted])

    def _get_version(
        self, subject: str, number: str, *, deleted: bool, body: Any
    ) -> httpx.Response:
        version = self.subjects.get(subject, {}).get(int(number))
        if version is None or (version.deleted and not deleted):
            return _error(404, 40402, f"Version {number} not found.")
        return _ok({"subject": subject, "version": int(number), "id": version.id, **version.schema})

    def _post_lookup(self, subject: str, *, deleted: bool, body: Any) -> httpx.Response:
        for number, version in self.subjects.get(subject, {}).items():
            if _same(version.schema, body) and (deleted or not version.deleted):
                return _ok({"subject": subject, "version": number, "id": version.id})
        return _error(404, 40403, "Schema not found")

    def _post_versions(self, subject: str, *, deleted: bool, body: Any) -> httpx.Response:
        given_id, given_version = body.pop("id", None), body.pop("version", None)
        importing = self.mode == "IMPORT"
        if importing != (given_id is not None):
            return _error(422, 42205, "id and version only in IMPORT mode, and needed there")
        for ref in body.get("references", []):
            if ref["version"] not in self.subjects.get(ref["subject"], {}):
                return _error(422, 42201, f"reference {ref} does not exist")
        if given_id is None or self.ignores_ids:
            given_id, self.next_id = self.next_id, self.next_id + 1
        elif given_id in self.contents and not _same(self.contents[given_id], body):
            return _error(422, 42205, f"id {given_id} is used by other content")
        versions = self.subjects.setdefault(subject, {})
        if self.strict and versions and not importing and self.levels.get(subject) != "NONE":
            return _error(409, 409, "Schema being registered is incompatible")
        number = given_version if importing and not self.ignores_ids else len(versions) + 1
        content = {"references": [], **body}
        versions[number] = Version(given_id, content)
        self.contents[given_id] = content
        return _ok({"id": given_id})

    def _get_mode(self, *, deleted: bool, body: Any) -> httpx.Response:
        if self.mode is None:
            return httpx.Response(404, text="Not Found")
        return _ok({"mode": self.mode})

    def _get_config(
        self, subject: str | None = None, *, deleted: bool, body: Any
    ) -> httpx.Response:
        if subject not in self.levels:
            return _error(404, 40408, f"Subject '{subject}' has no compatibility level")
        return _ok({"compatibilityLevel": self.levels[subject]})

    def _put_config(
        self, subject: str | None = None, *, deleted: bool, body: Any
    ) -> httpx.Response:
        self.levels[subject] = body["compatibility"]
        return _ok({"compatibility": body["compatibility"]})

    def _delete_config(self, subject: str, *, deleted: bool, body: Any) -> httpx.Response:
        level = self.levels.pop(subject, None)
        return _ok({"compatibilityLevel": level}) if level else _error(404, 40408, "none set")

    def _get_schema(self, schema_id: str, *, deleted: bool, body: Any) -> httpx.Response:
        content = self.contents.get(int(schema_id))
        return _ok(content) if content else _error(404, 40403, "Schema not found")


def _same(stored: dict[str, Any], given: dict[str, Any]) -> bool:
    def key(c: dict[str, Any]) -> tuple[Any, ...]:
        return (c["schema"], c.get("schemaType", "AVRO"), json.dumps(c.get("references", [])))

    return key(stored) == key(given)


def _ok(answer: Any) -> httpx.Response:
    return httpx.Response(200, json=answer)


def _error(status: int, code: int, message: str) -> httpx.Response:
    return httpx.Response(status, json={"error_code": code, "message": message})
