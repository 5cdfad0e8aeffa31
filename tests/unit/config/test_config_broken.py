"""Every broken mm2.properties in broken_configs/ fails with one clear line (expected.json):
through load(), and through connect-mirror-maker with exit code 2, at start and (except for
files missing on this host, which only warn there) with --print-config."""

from __future__ import annotations

import json
import string
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mm2.cli import runtime_main
from mm2.cli.mirror_maker import main
from mm2.config import load, parse_properties
from mm2.config.loader import load_properties
from mm2.errors import ConfigError

HERE = Path(__file__).parent / "broken_configs"
EXPECTED: dict[str, str] = json.loads((HERE / "expected.json").read_text(encoding="utf-8"))
# A file that is missing here may be there on the mirror's host: --print-config only warns.
START_ONLY = {
    "43_missing_truststore_file.properties",
    "50_missing_jaas_file.properties",
    "67_nul_in_file_name.properties",
}


def test_corpus_is_large_and_complete() -> None:
    files = sorted(p.name for p in HERE.glob("*.properties"))
    assert len(files) >= 60
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


@pytest.fixture
def no_runtime(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_: object) -> int:
        raise AssertionError("a broken file reached the runtime")

    monkeypatch.setattr(runtime_main, "run", refuse)


@pytest.mark.usefixtures("no_runtime")
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_cli_exits_2_with_one_line(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = HERE / name
    for argv in ([str(path)], [str(path), "--print-config"]):
        code = main(argv)
        err = capsys.readouterr().err.strip().splitlines()
        if name in START_ONLY and "--print-config" in argv:
            assert code == 0
            assert len(err) == 1 and "WARNING" in err[0] and EXPECTED[name] in err[0]
            continue
        assert code == 2, argv
        assert len(err) == 1, err
        assert err[0].startswith(f"connect-mirror-maker: error: {path}")
        assert EXPECTED[name] in err[0]


def test_unreadable_file() -> None:
    with pytest.raises(ConfigError, match="cannot read the file"):
        load(HERE / "does-not-exist.properties")


BASE = (
    "clusters = a, b\na.bootstrap.servers = a:1\nb.bootstrap.servers = b:1\na->b.enabled = true\n"
)


@pytest.mark.parametrize(
    ("line", "hint"),
    [
        ("a.consumer.auto.ofset.reset = earliest", "did you mean a.consumer.auto.offset.reset?"),
        ("a.bootstrap.server = a:1", "did you mean a.bootstrap.servers?"),
        ("primay.bootstrap.servers = a:1", None),
        ("aa.bootstrap.servers = a:1", "did you mean a.bootstrap.servers?"),
        ("refresh.topics.interval.second = 5", "did you mean refresh.topics.interval.seconds?"),
        ("a->b.topic = x", "did you mean a->b.topics?"),
        (
            "a->b.source.consumer.max.pol.records = 5",
            "did you mean a->b.source.consumer.max.poll.records?",
        ),
        ("emit.heartbeat.enabled = false", "did you mean emit.heartbeats.enabled?"),
        ("tasks.max = 2", None),
        ("spark.master = local[2]", None),
        ("a.offset.flush.interval.ms = 1000", None),
        # Apache's own Connect storage keys, as the seed tutorial sets them: no hint
        ("a.config.storage.replication.factor = 1", None),
        ("b.status.storage.replication.factor = 1", None),
        (
            "a.offset.storage.replicaton.factor = 1",
            "did you mean a.offset.storage.replication.factor?",
        ),
        ("some.plugin.setting = x", None),
    ],
)
def test_misspelt_key_gets_a_did_you_mean(line: str, hint: str | None) -> None:
    config = load_properties(parse_properties(BASE + line + "\n", "mm2.properties"))
    hints = [w for w in config.warnings if "did you mean" in w]
    if hint is None:
        assert hints == []
    else:
        assert len(hints) == 1 and hints[0].endswith(hint), hints
        assert hints[0].startswith("mm2.properties:5: ")


KEYS = [
    "clusters",
    "a.bootstrap.servers",
    "tasks.max",
    "a.producer.acks",
    "a->b.topics",
    "a.consumer.auto.offset.reset",
    "listeners",
    "rest.advertised.port",
    "a.ssl.keystore.type",
    "a.ssl.keystore.location",
    "a.sasl.jaas.config",
    "replication.policy.separator",
    "config.providers",
    "a->b.enabled",
    "mm2.configs.cluster",
    "a.sasl.mechanism",
    "offset.lag.max",
    "ssl.client.auth",
    "a.security.protocol",
    "b.producer.linger.ms",
]
VALUES = st.text(alphabet=string.printable + "\\é\u00e9${}:,->", max_size=30)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(KEYS), VALUES, max_size=6), st.text(max_size=40))
def test_no_input_gives_a_traceback(overrides: dict[str, str], tail: str) -> None:
    text = BASE + "".join(f"{k} = {v}\n" for k, v in overrides.items()) + tail
    try:
        load_properties(parse_properties(text, "fuzz.properties"), check_files=False)
    except ConfigError as exc:
        assert "\n" not in str(exc)


@pytest.mark.usefixtures("no_runtime")
def test_rest_settings_read_at_start_name_their_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    jaas = tmp_path / "connect.jaas"
    jaas.write_text("SomethingElse { x required; };\n", encoding="utf-8")
    path = tmp_path / "mm2.properties"
    path.write_text(
        BASE + "rest.extension.classes = org.apache.kafka.connect.rest.basic.auth.extension."
        f"BasicAuthSecurityRestExtension\njava.security.auth.login.config = {jaas}\n",
        encoding="utf-8",
    )
    assert main([str(path), "--print-config"]) == 0  # the JAAS entry is read at start only
    capsys.readouterr()
    assert main([str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith(
        f"connect-mirror-maker: error: {path}:6: java.security.auth.login.config: "
    )
    assert "KafkaConnect" in err[0]


def test_a_provider_value_is_not_repeated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MM2_TEST_ACKS", "most-secret")
    path = tmp_path / "mm2.properties"
    path.write_text(
        BASE + "config.providers = env\n"
        "config.providers.env.class = "
        "org.apache.kafka.common.config.provider.EnvVarConfigProvider\n"
        "b.producer.acks = ${env:MM2_TEST_ACKS}\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as err:
        load(path)
    message = str(err.value)
    assert ":7: b.producer.acks: the value of ${env:MM2_TEST_ACKS} is not accepted" in message
    assert "most-secret" not in message
