"""The README, BENCHMARKS.md, the benchmarks' run log and docs/ link only inside the repository,
to files and headings that exist, name in inline code only files of the repository that exist,
and the README maps every document of docs/."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.paths import REPO

ROOT = REPO
DOCUMENTS = [
    ROOT / "README.md",
    ROOT / "BENCHMARKS.md",
    ROOT / "bench" / "results" / "LOG.md",
    *sorted((ROOT / "docs").glob("*.md")),
]
# [text](target), not inside inline code; images too
_LINK = re.compile(r"(?<!`)!?\[[^\]\n]*\]\(([^)\s]+)\)")
_AUTOLINK = re.compile(r"<(https?://[^>\s]+)>")


def _without_code(text: str) -> str:
    """The text less fenced blocks and inline code, where brackets are not links."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.DOTALL | re.MULTILINE)
    return re.sub(r"`[^`\n]*`", "", text)


def _links(document: Path) -> list[str]:
    return _LINK.findall(_without_code(document.read_text(encoding="utf-8")))


def _anchors(document: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces as hyphens."""
    anchors = set()
    for line in _without_code(document.read_text(encoding="utf-8")).splitlines():
        heading = re.match(r"#{1,6} (.+)", line)
        if heading:
            title = re.sub(r"[^\w\- ]", "", heading.group(1).strip().lower())
            anchors.add(title.replace(" ", "-"))
    return anchors


def test_the_readme_maps_every_document() -> None:
    linked = set(_links(ROOT / "README.md"))
    documents = {p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md")}
    assert documents and documents <= linked
    assert "BENCHMARKS.md" in linked


def test_the_readme_points_nowhere_outside_the_repository() -> None:
    text = _without_code((ROOT / "README.md").read_text(encoding="utf-8"))
    outside = [t for t in _links(ROOT / "README.md") if re.match(r"[a-z][a-z0-9+.-]*:", t)]
    assert outside == [] and _AUTOLINK.findall(text) == []


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_relative_links_reach_files_and_headings_that_exist(document: Path) -> None:
    broken = []
    for target in _links(document):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):
            continue  # an address outside: only the README forbids them
        path, _, anchor = target.partition("#")
        linked = (document.parent / path).resolve() if path else document
        inside = linked.exists() and linked.is_relative_to(ROOT)
        known = not anchor or linked.suffix != ".md" or anchor in _anchors(linked)
        if not (inside and known):
            broken.append(target)
    assert broken == []


def test_the_anchor_rule_matches_githubs() -> None:
    operations = _anchors(ROOT / "docs" / "operations.md")
    assert {"run", "the-image-and-compose", "fail-over-and-fail-back"} <= operations
    assert "from-apache-mirrormaker-2" in _anchors(ROOT / "docs" / "migrating.md")
    rest = _anchors(ROOT / "docs" / "rest-api.md")
    assert "changes-from-another-sites-page" in rest  # an apostrophe is dropped


# `mm2/copy/loop.py`, `tests/integration/test_soak.py`, `bench/results/`: a path in inline code
# that starts at one of the repository's own top folders.
_NAMED_PATH = re.compile(
    r"`((?:mm2|tests|bench|docs|docker|deploy|\.ci)/[\w./-]*[\w/])(?::[\w.]+)?`"
)


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_file_a_document_names_exists(document: Path) -> None:
    text = re.sub(
        r"^```.*?^```", "", document.read_text(encoding="utf-8"), flags=re.DOTALL | re.MULTILINE
    )
    named = set(_NAMED_PATH.findall(text))
    missing = sorted(p for p in named if "*" not in p and not (ROOT / p).exists())
    assert missing == [], f"{document.name} names files that do not exist: {missing}"
