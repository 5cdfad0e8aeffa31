"""Config providers over REST, as Connect has them: values are stored and shown unresolved,
resolved only by the providers mm2.properties declares, within their allowed.paths, and no
resolved value reaches a response or a log line."""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from starlette.applications import Starlette
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route

from mm2.api.app import create_app
from mm2.api.redaction import RedactionMiddleware
from mm2.config.providers import Providers
from mm2.runtime.mirror_maker import MirrorMaker
from tests.support.api import PROPERTIES, FakeConnector, make_mirror

KAFKA = "org.apache.kafka.common.config.provider."
SOURCE = "primary.backup.MirrorSourceConnector"


@pytest.fixture
def secret_file(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A properties file of unique secret values (unique: redaction keeps the first ref)."""
    tag = uuid.uuid4().hex[:10]
    values = {
        "sep": f"SEP{tag}",
        "bs": f"h{tag}.invalid:9092",
        "tasks": f"many{tag}",
    }
    path = tmp_path / "allowed" / "secrets.properties"
    path.parent.mkdir()
    path.write_text("".join(f"{k} = {v}\n" for k, v in values.items()), encoding="utf-8")
    return path, values


def mirror_with(state: Path, extra: str) -> Iterator[tuple[MirrorMaker, TestClient]]:
    mirror = make_mirror(state, PROPERTIES + extra)
    mirror.start()
    try:
        yield mirror, TestClient(create_app(mirror))
    finally:
        mirror.stop()


@pytest.fixture
def declared(
    tmp_path: Path, secret_file: tuple[Path, dict[str, str]]
) -> Iterator[tuple[MirrorMaker, TestClient]]:
    """mm2.properties declares the FileConfigProvider, limited to the secrets' directory."""
    extra = (
        "config.providers = file\n"
        f"config.providers.file.class = {KAFKA}FileConfigProvider\n"
        f"config.providers.file.param.allowed.paths = {secret_file[0].parent}\n"
    )
    yield from mirror_with(tmp_path / "state", extra)


@pytest.fixture
def undeclared(tmp_path: Path) -> Iterator[tuple[MirrorMaker, TestClient]]:
    """mm2.properties declares no provider."""
    yield from mirror_with(tmp_path / "state", "")


def test_rest_values_are_stored_and_shown_unresolved_but_resolved_to_run(
    declared: tuple[MirrorMaker, TestClient],
    secret_file: tuple[Path, dict[str, str]],
    caplog: pytest.LogCaptureFixture,
    tmp_path: Path,
) -> None:
    _, client = declared
    path, values = secret_file
    sep, bs = f"${{file:{path}:sep}}", f"${{file:{path}:bs}}"
    body = {
        "source": "primary",
        "target": "dr",
        "clusters": {"dr": {"bootstrap.servers": bs}},
        "overrides": {"replication.policy.separator": sep},
    }
    with caplog.at_level(logging.DEBUG):
        assert client.post("/flows", json=body).status_code == 201
        name = "primary.dr.MirrorSourceConnector"
        config = client.get(f"/connectors/{name}/config").json()
        assert config["replication.policy.separator"] == sep
        assert config["target.cluster.bootstrap.servers"] == bs
        started = FakeConnector.started["primary->dr|MirrorSourceConnector"]
        assert started["replication.policy.separator"] == values["sep"]  # resolved to run
        assert started["target.cluster.bootstrap.servers"] == values["bs"]
        answers = [
            client.get(f"/connectors/{name}"),
            client.get(f"/connectors/{name}/tasks"),
            client.get(f"/connectors/{name}/status"),
            client.get("/connectors?expand=info&expand=status"),
            client.get("/flows"),
            client.get("/metrics"),
        ]
        tasks = answers[1].json()
        assert tasks[0]["config"]["replication.policy.separator"] == sep
    for answer in answers:
        assert answer.status_code == 200
        assert values["sep"] not in answer.text and values["bs"] not in answer.text
    assert values["sep"] not in caplog.text and values["bs"] not in caplog.text
    stored = json.loads((tmp_path / "state" / "rest-changes.json").read_text(encoding="utf-8"))
    assert sep in json.dumps(stored) and values["sep"] not in json.dumps(stored)


def test_a_path_outside_allowed_paths_is_refused_and_nothing_stored(
    declared: tuple[MirrorMaker, TestClient], tmp_path: Path
) -> None:
    _, client = declared
    body = {
        "source": "primary",
        "target": "dr",
        "clusters": {"dr": {"bootstrap.servers": "localhost:3"}},
        "overrides": {"replication.policy.separator": "${file:/etc/passwd:root}"},
    }
    refused = client.post("/flows", json=body)
    assert refused.status_code == 400
    assert "outside the provider's allowed.paths" in refused.json()["message"]
    assert not (tmp_path / "state" / "rest-changes.json").exists()
    config = client.get(f"/connectors/{SOURCE}/config").json()
    put = client.put(
        f"/connectors/{SOURCE}/config",
        json={**config, "source.cluster.sasl.jaas.config": "${file:/etc/passwd:root}"},
    )
    assert put.status_code == 400
    assert "source.cluster.sasl.jaas.config" in put.json()["errors"]
    assert "allowed.paths" in put.json()["message"]


def test_validation_errors_show_the_reference_not_the_value(
    declared: tuple[MirrorMaker, TestClient], secret_file: tuple[Path, dict[str, str]]
) -> None:
    _, client = declared
    path, values = secret_file
    ref = f"${{file:{path}:tasks}}"
    config = client.get(f"/connectors/{SOURCE}/config").json()
    bad = client.put(f"/connectors/{SOURCE}/config", json={**config, "tasks.max": ref})
    assert bad.status_code == 400 and "tasks.max" in bad.json()["errors"]
    assert values["tasks"] not in bad.text and ref in bad.text
    checked = client.put(
        "/connector-plugins/MirrorSourceConnector/config/validate",
        json={**config, "tasks.max": ref},
    )
    assert checked.json()["error_count"] == 1 and values["tasks"] not in checked.text


def test_only_the_files_providers_resolve(
    undeclared: tuple[MirrorMaker, TestClient], secret_file: tuple[Path, dict[str, str]]
) -> None:
    """A file without config.providers resolves nothing, whatever REST sends."""
    _, client = undeclared
    path, values = secret_file
    ref = f"${{file:{path}:sep}}"
    config = client.get(f"/connectors/{SOURCE}/config").json()
    declaring = {
        **config,
        "config.providers": "file",
        "config.providers.file.class": KAFKA + "FileConfigProvider",
        "replication.policy.separator": ref,
    }
    assert client.put(f"/connectors/{SOURCE}/config", json=declaring).status_code == 200
    started = FakeConnector.started["primary->backup|MirrorSourceConnector"]
    assert started["replication.policy.separator"] == ref  # left as written
    # a new cluster named "config" would spell config.providers at the top level
    sneaky = {
        "source": "primary",
        "target": "config",
        "clusters": {
            "config": {
                "bootstrap.servers": "localhost:3",
                "providers": "file",
                "providers.file.class": KAFKA + "FileConfigProvider",
            }
        },
        "overrides": {"replication.policy.separator": ref},
    }
    refused = client.post("/flows", json=sneaky)
    assert refused.status_code == 400 and "config.providers" in refused.json()["message"]
    assert values["sep"] not in refused.text


def test_top_level_keys_in_stored_changes_are_ignored(tmp_path: Path) -> None:
    """A change file (or record) that was tampered with cannot declare a provider or change
    a setting of the whole file."""
    state = tmp_path / "state"
    state.mkdir()
    (state / "rest-changes.json").write_text(
        json.dumps(
            {
                "clusters": ["config"],
                "properties": {
                    "config.bootstrap.servers": "localhost:3",
                    "config.providers": "file",
                    "config.providers.file.class": KAFKA + "FileConfigProvider",
                    "replication.policy.separator": "__",
                },
            }
        ),
        encoding="utf-8",
    )
    mirror = make_mirror(state)
    config = mirror.connectors.info(SOURCE).config
    assert "replication.policy.separator" not in config
    assert "config.providers" not in config


def test_every_answer_is_redacted_and_stays_json(tmp_path: Path) -> None:
    """The net under the views: whatever an answer quotes (a cause, a message, a label), even
    a value that JSON escapes."""
    value = f'say "{uuid.uuid4().hex}" \\ ok'
    escaped = value.replace("\\", "\\\\")  # a backslash is an escape in .properties
    (tmp_path / "q.properties").write_text(f"v = {escaped}\n", encoding="utf-8")
    ref = f"${{file:{tmp_path}/q.properties:v}}"
    declared = {
        "config.providers": "file",
        "config.providers.file.class": KAFKA + "FileConfigProvider",
    }
    assert Providers.from_settings(declared).resolve(ref) == value

    def as_json(_request: object) -> JSONResponse:
        return JSONResponse({"cause": f"FAILED: {value}", "n": 1, value: [value]})

    def as_text(_request: object) -> PlainTextResponse:
        return PlainTextResponse(f"label={value}")

    app = Starlette(routes=[Route("/j", as_json), Route("/t", as_text)])
    client = TestClient(RedactionMiddleware(app))
    answer = client.get("/j")
    assert int(answer.headers["content-length"]) == len(answer.content)
    assert answer.json() == {"cause": f"FAILED: {ref}", "n": 1, ref: [ref]}
    assert client.get("/t").text == f"label={ref}"
