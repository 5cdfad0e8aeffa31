"""`mm2 translate-offsets/failover/failback`: argument and config errors, no broker needed."""

from __future__ import annotations

from pathlib import Path

import pytest

from mm2.cli import tools


def properties(tmp_path: Path) -> str:
    path = tmp_path / "mm2.properties"
    path.write_text(
        "clusters = primary, backup, third\n"
        "primary.bootstrap.servers = 127.0.0.1:1\n"
        "backup.bootstrap.servers = 127.0.0.1:2\n"
        "third.bootstrap.servers = 127.0.0.1:3\n"
        "primary->backup.enabled = true\n"
        "emit.heartbeats.enabled = false\n",
        encoding="utf-8",
    )
    return str(path)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = tools.main(list(argv))
    return code, capsys.readouterr().err


def test_unknown_alias_names_the_defined_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = properties(tmp_path)
    code, err = run(
        capsys,
        "failover",
        "--config",
        config,
        "--group",
        "g",
        "--from",
        "primray",
        "--to",
        "backup",
    )
    assert code == 2
    assert "mm2 failover: error:" in err and "unknown cluster alias 'primray'" in err
    assert "primary, backup, third" in err


def test_flow_not_in_the_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = properties(tmp_path)
    code, err = run(
        capsys,
        "translate-offsets",
        "--config",
        config,
        "--group",
        "g",
        "--source",
        "third",
        "--target",
        "backup",
    )
    assert code == 2 and "no flow third->backup" in err and "primary->backup" in err


def test_broken_config_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = run(
        capsys,
        "failback",
        "--config",
        str(tmp_path / "missing.properties"),
        "--group",
        "g",
        "--from",
        "backup",
        "--to",
        "primary",
    )
    assert code == 2 and "missing.properties" in err
