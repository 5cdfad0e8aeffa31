"""`connect-mirror-maker --print-config`: JSON of every herder, Apache key names, secrets hidden."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mm2.cli.mirror_maker import main

TEXT = (
    "clusters = a, b, c\n"
    "a.bootstrap.servers = a:1\nb.bootstrap.servers = b:1\nc.bootstrap.servers = c:1\n"
    "a->b.enabled = true\na->b.topics = t.*\n"
    "a.ssl.truststore.password = s3cret\nreplication.policy.separator = _\n"
)


def run(tmp_path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str, str]:
    path = tmp_path / "mm2.properties"
    path.write_text(TEXT, encoding="utf-8")
    code = main([str(path), "--print-config", *extra])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_print_config_shape(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(tmp_path, capsys)
    assert code == 0
    flows = json.loads(out)["flows"]
    assert len(flows) == 6
    ab = next(f for f in flows if (f["source"], f["target"]) == ("a", "b"))
    assert ab["enabled"] is True
    assert set(ab["connectors"]) == {
        "MirrorSourceConnector",
        "MirrorCheckpointConnector",
        "MirrorHeartbeatConnector",
    }
    src = ab["connectors"]["MirrorSourceConnector"]
    assert src["source.cluster.alias"] == "a"
    assert src["target.cluster.alias"] == "b"
    assert src["source.cluster.bootstrap.servers"] == "a:1"
    assert src["source.consumer.bootstrap.servers"] == "a:1"
    assert src["topics"] == "t.*"
    assert src["replication.policy.separator"] == "_"
    assert src["enabled"] == "true"
    assert src["source.cluster.ssl.truststore.password"] == "[hidden]"
    assert "s3cret" not in out
    ba = next(f for f in flows if (f["source"], f["target"]) == ("b", "a"))
    assert ba["enabled"] is False
    assert ba["connectors"]["MirrorSourceConnector"]["enabled"] == "false"


def test_print_config_clusters_filter(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(tmp_path, capsys, "--clusters", "b")
    assert code == 0
    assert {(f["source"], f["target"]) for f in json.loads(out)["flows"]} == {
        ("a", "b"),
        ("c", "b"),
    }


def test_unknown_cluster_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(tmp_path, capsys, "--clusters", "zz")
    assert code == 2
    assert "unknown alias(es) zz" in err


@pytest.mark.parametrize(
    "order",
    [
        ["{file}", "--clusters", "b", "c", "--print-config"],
        ["--clusters", "b", "c", "{file}", "--print-config"],
        ["--print-config", "--clusters", "b", "c", "{file}"],
    ],
)
def test_clusters_before_or_after_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], order: list[str]
) -> None:
    path = tmp_path / "mm2.properties"
    path.write_text(TEXT, encoding="utf-8")
    code = main([str(path) if word == "{file}" else word for word in order])
    out = capsys.readouterr().out
    assert code == 0
    assert {(f["source"], f["target"]) for f in json.loads(out)["flows"]} == {
        ("a", "b"),
        ("c", "b"),
        ("a", "c"),
        ("b", "c"),
    }


def test_clusters_alone_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--clusters", "mm2.properties"])
    assert exit_.value.code == 2
    assert "required: config" in capsys.readouterr().err


def test_worker_keys_are_not_printed_as_connector_keys(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Apache's MirrorMakerConfig keeps them worker keys; a real-world file sets the first one.
    path = tmp_path / "mm2.properties"
    path.write_text(
        TEXT + "offset.storage.replication.factor = 1\nconfig.storage.replication.factor = 1\n"
        "exactly.once.source.support = enabled\n",
        encoding="utf-8",
    )
    assert main([str(path), "--print-config"]) == 0
    out = capsys.readouterr().out
    for flow in json.loads(out)["flows"]:
        for config in flow["connectors"].values():
            assert not {k for k in config if k.startswith(("offset.storage.", "config.storage."))}
            assert "exactly.once.source.support" not in config
