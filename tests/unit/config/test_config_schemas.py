"""Schema Registry settings: both clusters of a flow naming a registry turn its schema
connector on; the keys are known (no "did you mean"), typed, secret where they should be and
resolved through config providers like every other secret."""

from __future__ import annotations

from pathlib import Path

import pytest

from mm2.config import load_properties, parse_properties
from mm2.config.model import SCHEMA, is_password
from mm2.errors import ConfigError

BASE = """clusters = a, b
a.bootstrap.servers = a:9092
b.bootstrap.servers = b:9092
a->b.enabled = true
"""
REGISTRIES = """a.schema.registry.url = http://a-registry:8081
b.schema.registry.url = http://b-registry:8081
"""


def connectors(extra: str) -> list[str]:
    config = load_properties(parse_properties(BASE + extra, "mm2.properties"), log_warnings=False)
    return list(config.flow("a", "b").connectors)


def test_no_registries_no_schema_connector() -> None:
    assert SCHEMA not in connectors("")
    assert SCHEMA not in connectors("a.schema.registry.url = http://a-registry:8081\n")


def test_both_registries_add_the_schema_connector_with_its_settings() -> None:
    text = BASE + REGISTRIES
    config = load_properties(parse_properties(text, "m.properties"), log_warnings=False)
    assert not config.warnings
    flow = config.flow("a", "b")
    assert list(flow.connectors)[-1] == SCHEMA
    plugin = flow.connectors[SCHEMA]["connector.class"]
    assert plugin == "mm2.connectors.schema.MirrorSchemaConnector"
    assert flow.settings.schema.sync_schemas_interval_seconds == 1
    url = "schema.registry.url"
    assert flow.schema_registry_config("source") == {url: "http://a-registry:8081"}
    assert flow.schema_registry_config("target") == {url: "http://b-registry:8081"}


def test_interval_filter_and_off_switch() -> None:
    extra = REGISTRIES + "sync.schemas.interval.seconds = 5\na->b.schemas.exclude = .*-key\n"
    config = load_properties(parse_properties(BASE + extra, "m.properties"), log_warnings=False)
    flow = config.flow("a", "b")
    assert flow.settings.schema.sync_schemas_interval_seconds == 5
    assert flow.connector_config(SCHEMA)["schemas.exclude"] == ".*-key"
    off = BASE + REGISTRIES + "sync.schemas.enabled = false\n"
    flow = load_properties(parse_properties(off, "m.properties")).flow("a", "b")
    assert flow.settings.schema.sync_schemas_interval_seconds is None


def test_credentials_are_secret_and_resolved_through_providers(tmp_path: Path) -> None:
    secret = tmp_path / "registry.properties"
    secret.write_text("user.info = mirror:s3cret\n", encoding="utf-8")
    extra = REGISTRIES + (
        "config.providers = file\n"
        "config.providers.file.class = org.apache.kafka.common.config.provider.FileConfigProvider\n"
        f"b.schema.registry.basic.auth.user.info = ${{file:{secret}:user.info}}\n"
        "b.schema.registry.ssl.ca.location = /etc/ssl/registry-ca.pem\n"
    )
    flow = load_properties(parse_properties(BASE + extra, "m.properties")).flow("a", "b")
    target = flow.schema_registry_config("target")
    assert target["schema.registry.basic.auth.user.info"] == "mirror:s3cret"
    assert target["schema.registry.ssl.ca.location"] == "/etc/ssl/registry-ca.pem"
    assert "s3cret" not in str(flow.connectors[SCHEMA])  # kept unresolved, as given
    assert is_password("b.schema.registry.basic.auth.user.info")
    assert is_password("target.cluster.schema.registry.ssl.key.password")


@pytest.mark.parametrize(
    "line",
    [
        "a->b.schemas = orders-(value",
        "sync.schemas.interval.seconds = soon",
        "a.schema.registry.requests.per.second = -1",
        "b.schema.registry.basic.auth.credentials.source = SASL_INHERIT",
    ],
)
def test_values_that_cannot_work_stop_the_load(line: str) -> None:
    with pytest.raises(ConfigError):
        load_properties(parse_properties(BASE + REGISTRIES + line + "\n", "m.properties"))


def test_a_misspelt_registry_key_gets_a_suggestion() -> None:
    text = BASE + REGISTRIES + "a.schema.registry.basic.auth.user.inf = u:p\n"
    config = load_properties(parse_properties(text, "m.properties"), log_warnings=False)
    assert any("did you mean a.schema.registry.basic.auth.user.info" in w for w in config.warnings)
