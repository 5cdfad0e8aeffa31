"""Config providers as Kafka has them: allowed.paths (KIP-993), allowlist.pattern (KIP-887),
undeclared providers left alone, and resolved values kept out of every log line."""

from __future__ import annotations

import logging
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Producer

from mm2.config.providers import ProviderProblem, Providers, redact
from mm2.kafka.failure import ClientWatch

KAFKA = "org.apache.kafka.common.config.provider."


def providers(**params: str) -> Providers:
    raw = {
        "config.providers": "file, dir, env",
        "config.providers.file.class": KAFKA + "FileConfigProvider",
        "config.providers.dir.class": KAFKA + "DirectoryConfigProvider",
        "config.providers.env.class": KAFKA + "EnvVarConfigProvider",
    }
    raw.update({f"config.providers.{k.replace('_', '.')}": v for k, v in params.items()})
    return Providers.from_settings(raw)


@pytest.fixture
def secrets(tmp_path: Path) -> Path:
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    (allowed / "s.properties").write_text("pw = inside-secret-1\n", encoding="utf-8")
    (allowed / "token").write_text("dir-secret-2", encoding="utf-8")
    (tmp_path / "outside.properties").write_text("pw = outside-secret-3\n", encoding="utf-8")
    return tmp_path


def test_file_and_dir_providers_read_only_under_allowed_paths(secrets: Path) -> None:
    allowed = secrets / "allowed"
    p = providers(file_param_allowed_paths=str(allowed), dir_param_allowed_paths=str(allowed))
    assert p.resolve(f"${{file:{allowed}/s.properties:pw}}") == "inside-secret-1"
    assert p.resolve(f"${{dir:{allowed}:token}}") == "dir-secret-2"
    for ref in (
        f"${{file:{secrets}/outside.properties:pw}}",
        f"${{file:{allowed}/../outside.properties:pw}}",  # no way out with ..
        "${file:/etc/passwd:root}",
        "${file:outside.properties:pw}",  # relative paths are not under an allowed one
        f"${{dir:{secrets}:outside.properties}}",
    ):
        with pytest.raises(ProviderProblem, match=r"outside the provider's allowed\.paths"):
            p.resolve(ref)
    with pytest.raises(ProviderProblem, match="not the name of a file"):
        p.resolve(f"${{dir:{allowed}:../outside.properties}}")


def test_a_symlink_out_of_the_allowed_paths_is_refused(secrets: Path) -> None:
    allowed = secrets / "allowed"
    (allowed / "link.properties").symlink_to(secrets / "outside.properties")
    p = providers(file_param_allowed_paths=str(allowed))
    with pytest.raises(ProviderProblem, match=r"allowed\.paths"):
        p.resolve(f"${{file:{allowed}/link.properties:pw}}")


def test_allowed_paths_must_be_absolute_and_exist(tmp_path: Path) -> None:
    with pytest.raises(ProviderProblem, match="must be absolute and exist"):
        providers(file_param_allowed_paths="relative/dir")
    with pytest.raises(ProviderProblem, match=r"allowed\.paths"):
        providers(file_param_allowed_paths=str(tmp_path / "missing"))


def test_without_allowed_paths_every_file_is_readable(secrets: Path) -> None:
    p = providers()
    assert p.resolve(f"${{file:{secrets}/outside.properties:pw}}") == "outside-secret-3"


def test_env_allowlist_pattern(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MM2_OK_VALUE", "env-secret-4")
    monkeypatch.setenv("OTHER_VALUE", "env-secret-5")
    p = providers(env_param_allowlist_pattern="MM2_.*")
    assert p.resolve("${env:MM2_OK_VALUE}") == "env-secret-4"
    with pytest.raises(ProviderProblem, match=r"allowlist\.pattern"):
        p.resolve("${env:OTHER_VALUE}")


def test_undeclared_providers_resolve_nothing(secrets: Path) -> None:
    ref = f"${{file:{secrets}/outside.properties:pw}}"
    assert Providers.from_settings({}).resolve(ref) == ref
    assert Providers.from_settings({}).resolve_all({"k": ref}) == {"k": ref}


def test_resolved_values_are_redacted_in_texts_and_log_records(
    secrets: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (secrets / "log.properties").write_text(f"pw = log-secret-{uuid.uuid4().hex}\n")
    ref = f"${{file:{secrets}/log.properties:pw}}"
    value = providers().resolve(ref)
    assert redact(f"connecting to {value} failed") == f"connecting to {ref} failed"
    log = logging.getLogger("mm2.test.redaction")
    with caplog.at_level(logging.INFO):
        log.info("bootstrap %s unreachable", value)
        try:
            raise RuntimeError(f"cannot use {value}")
        except RuntimeError:
            log.exception("failed")
    assert caplog.records
    assert value not in caplog.text
    assert ref in caplog.text


def test_short_values_are_not_hidden_everywhere(secrets: Path) -> None:
    (secrets / "short.properties").write_text("n = 1\n", encoding="utf-8")
    assert providers().resolve(f"${{file:{secrets}/short.properties:n}}") == "1"
    assert redact("tasks.max = 1") == "tasks.max = 1"


def test_librdkafka_log_lines_go_through_logging_redacted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The ~1,700 lines of the issue: librdkafka logged an unreachable bootstrap server a
    provider resolved, straight to stderr."""
    (tmp_path / "c.properties").write_text(f"bs = h{uuid.uuid4().hex}.invalid:9092\n")
    ref = f"${{file:{tmp_path}/c.properties:bs}}"
    servers = providers().resolve(ref)
    producer = Producer(ClientWatch({"bootstrap.servers": servers}, alias="dr").settings())
    deadline = time.monotonic() + 60
    with caplog.at_level(logging.DEBUG, logger="mm2.kafka.librdkafka"):
        while not any(r.name == "mm2.kafka.librdkafka" for r in caplog.records):
            assert time.monotonic() < deadline, "librdkafka logged nothing"
            producer.poll(0.2)
    lines = [r.getMessage() for r in caplog.records if r.name == "mm2.kafka.librdkafka"]
    assert any(ref in line for line in lines), lines
    assert servers not in caplog.text
    producer.flush(0)
