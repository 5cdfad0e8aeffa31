"""--version on both commands; --log-config and --log-file on connect-mirror-maker."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import pytest

from mm2.cli import mirror_maker, tools
from tests.support.logs import logging_restored


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    with logging_restored():
        yield


@pytest.mark.parametrize(
    ("main", "prog"), [(mirror_maker.main, "connect-mirror-maker"), (tools.main, "mm2")]
)
def test_version(main: object, prog: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])  # type: ignore[operator]
    assert exited.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{prog} {metadata.version('mm2')} (")
    assert f"confluent-kafka {metadata.version('confluent-kafka')}" in out
    assert f"pyspark {metadata.version('pyspark')}" in out


def _properties(tmp_path: Path) -> Path:
    props = tmp_path / "mm2.properties"
    props.write_text(
        "clusters = a, b\na.bootstrap.servers = a:9092\nb.bootstrap.servers = b:9092\n"
    )
    return props


def test_a_broken_log_config_exits_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "logging.json"
    config.write_text("{not json")
    code = mirror_maker.main([str(_properties(tmp_path)), "--log-config", str(config)])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1
    assert err.startswith(f"connect-mirror-maker: error: --log-config {config}: JSONDecodeError")


def test_an_unwritable_log_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    where = tmp_path / "no-such-dir" / "mm2.log"
    assert mirror_maker.main([str(_properties(tmp_path)), "--log-file", str(where)]) == 2
    assert capsys.readouterr().err.startswith(f"connect-mirror-maker: error: --log-file {where}")


def test_log_config_and_log_file_exclude_each_other(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exited:
        mirror_maker.parse_args(["x.properties", "--log-config", "a.ini", "--log-file", "b.log"])
    assert exited.value.code == 2


def test_print_config_logs_to_the_log_file_not_stdout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "mm2.log"
    props = _properties(tmp_path)
    props.write_text(props.read_text() + "a.consumer.auto.ofset.reset = earliest\n")
    assert mirror_maker.main(["--print-config", str(props), "--log-file", str(out)]) == 0
    assert capsys.readouterr().out.lstrip().startswith("{")
    for handler in logging.getLogger().handlers:
        handler.flush()
    assert "did you mean" in out.read_text()
