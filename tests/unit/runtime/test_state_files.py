"""State files under mm2.state.dir: written atomically; a damaged or wrong-typed one (or a
state dir that is a file) stops the start with one line naming it, and is never overwritten."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from mm2.connectors.checkpoint import load_snapshot
from mm2.runtime.changes import Changes, ChangeStore
from mm2.runtime.secrets import SealedChanges, SecretBox
from mm2.runtime.state_file import StateFileError, read_json, write_json
from tests.support.api import PROPERTIES


def test_writes_are_atomic_and_private(tmp_path: Path) -> None:
    store = ChangeStore(tmp_path / "state" / "rest-changes.json")
    store.update(lambda c: c.clusters.append("dr"))
    path = store.path
    assert json.loads(path.read_text())["clusters"] == ["dr"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in path.parent.iterdir()] == ["rest-changes.json"]  # no temp file


def test_a_failed_write_leaves_the_old_file(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    write_json(path, {"v": 1})
    with pytest.raises(TypeError):
        write_json(path, {"v": object()})  # fails half way through the JSON
    assert json.loads(path.read_text()) == {"v": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["state.json"]


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b'{"clusters": ["dr"', "is damaged: not JSON at line 1"),
        (b"\xff\xfe\x00", "not UTF-8"),
        (b'["dr"]', "holds a JSON list, not an object"),
        (b'{"clusters": "dr"}', "clusters: Input should be a valid list"),
        (b'{"target_states": {"a.b.C": "HALTED"}}', "target_states.a.b.C"),
        (b'{"properties": {"dr.bootstrap.servers": 9092}}', "valid string"),
    ],
)
def test_a_damaged_or_wrong_typed_change_file_is_named_and_kept(
    tmp_path: Path, content: bytes, reason: str
) -> None:
    path = tmp_path / "rest-changes.json"
    path.write_bytes(content)
    for codec in (None, SealedChanges(SecretBox(None))):
        with pytest.raises(StateFileError) as err:
            ChangeStore(path, codec=codec)
        assert str(err.value).startswith(str(path)) and reason in str(err.value)
        assert "\n" not in str(err.value)
    assert path.read_bytes() == content


def test_a_state_dir_that_is_a_file_is_named(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.write_text("not a directory")
    with pytest.raises(StateFileError, match="is not a directory") as err:
        ChangeStore(state / "rest-changes.json")
    assert err.value.file == str(state)
    with pytest.raises(StateFileError, match="is not a directory"):
        write_json(state / "a" / "b.json", {})
    assert state.read_text() == "not a directory"


def test_a_damaged_checkpoint_state_is_named(tmp_path: Path) -> None:
    path = tmp_path / "checkpoint-task.json"
    assert load_snapshot(path) is None
    path.write_text('{"position": 3, "translator": []}')
    with pytest.raises(StateFileError, match="checkpoint state that cannot be used"):
        load_snapshot(path)
    assert read_json(path) == {"position": 3, "translator": []}


@pytest.fixture
def mm2_properties(tmp_path: Path) -> Path:
    props = tmp_path / "mm2.properties"
    text = PROPERTIES + f"mm2.state.dir = {tmp_path / 'state'}\nlisteners = http://127.0.0.1:0\n"
    props.write_text(text, encoding="utf-8")
    return props


@pytest.mark.parametrize(
    "damage",
    ["rest-changes", "checkpoint", "state-dir-is-a-file"],
)
def test_connect_mirror_maker_exits_2_with_one_line_naming_the_file(
    mm2_properties: Path, tmp_path: Path, damage: str
) -> None:
    state = tmp_path / "state"
    if damage == "state-dir-is-a-file":
        damaged, content = state, b"oops"
    elif damage == "rest-changes":
        damaged, content = state / "rest-changes.json", b"{ damaged"
    else:
        damaged, content = state / "primary_to_backup" / "checkpoint-task.json", b"[1, 2]"
    damaged.parent.mkdir(parents=True, exist_ok=True)
    damaged.write_bytes(content)
    # A process of its own: the CLI sets up logging and signal handlers for the whole process.
    done = subprocess.run(
        [sys.executable, "-m", "mm2.cli.mirror_maker", str(mm2_properties)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    err = done.stderr
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if str(damaged) in line]
    assert len(lines) == 1 and "ERROR" in lines[0], err
    assert damaged.read_bytes() == content


def test_sealed_changes_round_trip_through_the_file(tmp_path: Path) -> None:
    codec = SealedChanges(SecretBox("k"))
    store = ChangeStore(tmp_path / "rest-changes.json", codec=codec)
    store.update(lambda c: c.properties.update({"dr.sasl.jaas.config": "secret"}))
    assert "secret" not in store.path.read_text()
    again = ChangeStore(tmp_path / "rest-changes.json", codec=codec)
    assert again.changes == Changes(properties={"dr.sasl.jaas.config": "secret"})
