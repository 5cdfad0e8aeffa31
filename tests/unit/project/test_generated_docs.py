"""docs/configuration-reference.md and docs/rest-reference.md are what mm2.cli.docgen makes from
the code now (so they cannot drift), and what it makes them from covers every key mm2 knows."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from mm2.api.app import create_app, openapi_document
from mm2.cli import docgen
from mm2.config.catalog import CATALOG
from mm2.config.client_defs import CLIENT_DEFS
from mm2.config.keys import TOP_LEVEL
from mm2.config.names import (
    CLIENT_CONFIG_NAMES,
    CONNECT_STORAGE_NAMES,
    CONNECTOR_CONFIG_NAMES,
    MM2_NAMES,
)
from mm2.config.settings import (
    DEFAULT_INTERVALS_S,
    MirrorMakerSettings,
    flow_settings,
)
from mm2.config.value_types import TYPES
from mm2.runtime.mirror_maker import MirrorMaker
from tests.support.paths import REPO


@pytest.mark.parametrize("page", sorted(docgen.DOCS))
def test_the_committed_page_is_what_the_code_makes_now(page: str) -> None:
    committed = (REPO / page).read_text(encoding="utf-8")
    assert committed == docgen.DOCS[page](), f"{page} is out of date: run `make docs`"


def test_every_key_mm2_knows_has_a_meaning_and_every_meaning_a_key() -> None:
    client_keys = set().union(*CLIENT_DEFS.values())
    known = CONNECTOR_CONFIG_NAMES | CLIENT_CONFIG_NAMES | MM2_NAMES | CONNECT_STORAGE_NAMES
    known |= set(TOP_LEVEL)
    missing = sorted(known - client_keys - set(CATALOG))
    assert missing == [], f"add a line for each to mm2/config/catalog.py: {missing}"
    # A catalog key is one the code checks or reads; client keys are documented from CLIENT_DEFS.
    unknown = sorted(set(CATALOG) - known - set(TYPES))
    assert unknown == []
    assert not (set(CATALOG) & CLIENT_CONFIG_NAMES - {"bootstrap.servers", "security.protocol"})


def test_every_settings_field_has_its_key_in_the_page() -> None:
    # A field read from the same key by two connectors (offset-syncs.topic.replication.factor)
    # is mapped once.
    mapped = {field for _, field in docgen.FLOW_FIELDS.values()}
    flow = flow_settings("a", {}, {}, {}, {})
    intervals = {n.replace(".", "_") + "_interval_seconds" for n in DEFAULT_INTERVALS_S}
    unmapped = [
        (group.name, field.name)
        for group in dataclasses.fields(flow)
        for field in dataclasses.fields(getattr(flow, group.name))
        if field.name not in mapped
        and field.name not in intervals
        and field.name != "mm2_state_dir"  # a process key (PROCESS_FIELDS), copied per flow
    ]
    assert unmapped == []
    process = {f.name for f in dataclasses.fields(MirrorMakerSettings)}
    assert process == set(docgen.PROCESS_FIELDS.values())
    defaults = docgen.settings_defaults()
    assert defaults["offset.lag.max"] == 100 and defaults["sync.group.offsets.enabled"] is False


def test_the_rest_page_reads_the_document_the_app_serves(mirror: MirrorMaker) -> None:
    assert openapi_document() == create_app(mirror).openapi()
    assert openapi_document(secured=True) == create_app(mirror, credentials={"a": "b"}).openapi()


def test_check_names_a_stale_page_and_writing_makes_it_current(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "docs").mkdir()
    assert docgen.main(["--check", "--root", str(tmp_path)]) == 1
    assert "docs/rest-reference.md is out of date: run `make docs`" in capsys.readouterr().err
    assert docgen.main(["--root", str(tmp_path)]) == 0
    assert docgen.main(["--check", "--root", str(tmp_path)]) == 0
