"""docs/rest-reference.md from the OpenAPI document the app serves (mm2.api.app.openapi_document);
written and checked by mm2.cli.docgen."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from mm2.api.app import openapi_document
from mm2.cli.markdown import HEADER, cell, table

__all__ = ["rest_reference"]


def _ref(schema: Mapping[str, Any] | bool) -> str:
    if isinstance(schema, bool):  # additionalProperties: true
        return "any"
    if "$ref" in schema:
        return "`" + str(schema["$ref"]).rsplit("/", 1)[-1] + "`"
    for union in ("anyOf", "oneOf"):
        if union in schema:
            parts = [_ref(s) for s in schema[union] if s.get("type") != "null"]
            return " or ".join(parts)
    if schema.get("type") == "array":
        return "list of " + _ref(schema.get("items", {}))
    if schema.get("type") == "object" and "additionalProperties" in schema:
        return "map of " + _ref(schema["additionalProperties"])
    return str(schema.get("type", "any"))


def _body(content: Mapping[str, Any]) -> str:
    return " or ".join(
        f"{_ref(media.get('schema', {}))}" + ("" if kind == "application/json" else f" ({kind})")
        for kind, media in content.items()
    )


def _responses(responses: Mapping[str, Any]) -> str:
    parts = []
    for code in sorted(responses):
        content = responses[code].get("content", {})
        body = _body(content) if content else ""
        parts.append(f"{code} {body}".strip() if code < "400" else code)
    return ", ".join(parts)


def _parameters(parameters: Iterable[Mapping[str, Any]]) -> str:
    return ", ".join(
        f"`{p['name']}` ({p['in']}{'' if p.get('required') else ', optional'})"
        for p in parameters
        if p["in"] != "path"
    )


def rest_reference(document: Mapping[str, Any] | None = None) -> str:
    """The REST reference page."""
    doc = openapi_document() if document is None else document
    sections: dict[str, list[list[str]]] = {}
    for path, operations in doc["paths"].items():
        for method, op in operations.items():
            tag = (op.get("tags") or ["other"])[0]
            what = op.get("summary", "")
            if op.get("description"):
                what += ": " + op["description"]
            body = op.get("requestBody")
            sections.setdefault(tag, []).append(
                [
                    f"`{method.upper()} {path}`",
                    what,
                    _parameters(op.get("parameters", [])),
                    _body(body["content"]) if body else "",
                    _responses(op.get("responses", {})),
                ]
            )
    out = [
        HEADER.format(source="the OpenAPI document (mm2/api, served at /openapi.json)"),
        "# REST reference\n\n",
        f"{doc['info']['title']} {doc['info']['version']}. {cell(doc['info']['description'])} "
        "How to use it: [rest-api.md](rest-api.md). Every change (POST, PUT, PATCH, DELETE) can "
        "also answer 403; with authentication on, every operation can answer 401.\n\n",
    ]
    for tag in sorted(sections):
        out += [f"## {tag.capitalize()}\n\n"]
        header = ["operation", "what", "parameters", "body", "answers"]
        out += [table(header, sections[tag]), "\n"]
    out += ["## Bodies\n\n"]
    rows = []
    for name, schema in sorted(doc.get("components", {}).get("schemas", {}).items()):
        required = set(schema.get("required", []))
        fields = ", ".join(
            f"`{field}`{'' if field in required else '?'}: {_ref(spec)}"
            for field, spec in schema.get("properties", {}).items()
        )
        rows.append([f"`{name}`", cell(schema.get("description", "")), fields])
    out += [
        "A field marked `?` may be left out.\n\n",
        table(["body", "what", "fields"], rows),
    ]
    return "".join(out)
