"""Every broken mm2.properties in broken_configs/ fails with one clear line (expected.json)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mm2.config import load
from mm2.errors import ConfigError

HERE = Path(__file__).parent / "broken_configs"
EXPECTED: dict[str, str] = json.loads((HERE / "expected.json").read_text(encoding="utf-8"))


def test_corpus_is_large_and_complete() -> None:
    files = sorted(p.name for p in HERE.glob("*.properties"))
    assert len(files) >= 30
    assert files == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_broken_file_is_explained(name: str) -> None:
    path = HERE / name
    with pytest.raises(ConfigError) as err:
        load(path)
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(str(path))
    assert EXPECTED[name] in message, message


def test_unreadable_file() -> None:
    with pytest.raises(ConfigError, match="cannot read the file"):
        load(HERE / "does-not-exist.properties")
