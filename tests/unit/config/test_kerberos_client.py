"""Kerberos settings the Java way -> librdkafka's, and the start-up check that the installed
Kafka client can speak the SASL mechanism a file asks for."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path

import pytest

from mm2.cli import client_features
from mm2.cli.client_features import require_client_features
from mm2.config import load
from mm2.config.librdkafka import TranslationProblem, translate_client_config
from mm2.errors import ConfigError
from mm2.kafka.features import has_feature, required_features

KRB5 = "com.sun.security.auth.module.Krb5LoginModule required"


def admin(settings: Mapping[str, str]) -> dict[str, str]:
    return translate_client_config(settings, "admin").config


def test_keytab_principal_and_service_name_map_to_librdkafka() -> None:
    out = admin(
        {
            "sasl.mechanism": "GSSAPI",
            "sasl.jaas.config": f'{KRB5} useKeyTab=true storeKey=true keyTab="/etc/m m2.keytab" '
            'principal="mirror@EX.COM" serviceName="kafka";',
        }
    )
    assert out["sasl.mechanisms"] == "GSSAPI"
    assert out["sasl.kerberos.keytab"] == "/etc/m m2.keytab"
    assert out["sasl.kerberos.principal"] == "mirror@EX.COM"
    assert out["sasl.kerberos.service.name"] == "kafka"
    assert "sasl.kerberos.kinit.cmd" not in out  # librdkafka's default kinit -t keytab -k


def test_an_explicit_service_name_wins_over_the_jaas_option() -> None:
    out = admin(
        {
            "sasl.kerberos.service.name": "kafka-prod",
            "sasl.jaas.config": f'{KRB5} useKeyTab=true keyTab="/k" principal="m@R" '
            'serviceName="kafka";',
        }
    )
    assert out["sasl.kerberos.service.name"] == "kafka-prod"


def test_a_ticket_cache_login_runs_no_kinit() -> None:
    out = admin({"sasl.jaas.config": f"{KRB5} useTicketCache=true;"})
    assert out["sasl.kerberos.min.time.before.relogin"] == "0"
    assert "sasl.kerberos.keytab" not in out


def test_the_default_keytab_logs_in_without_a_keytab_path() -> None:
    out = admin({"sasl.jaas.config": f'{KRB5} useKeyTab=true principal="m@R";'})
    assert out["sasl.kerberos.kinit.cmd"] == (
        "kinit -R -k %{sasl.kerberos.principal} || kinit -k %{sasl.kerberos.principal}"
    )


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ('useKeyTab=true keyTab="/k"', "needs principal="),
        ("storeKey=true", "cannot prompt for a password"),
    ],
)
def test_a_krb5_login_librdkafka_cannot_perform_names_the_jaas_key(options: str, says: str) -> None:
    with pytest.raises(TranslationProblem, match=says) as caught:
        admin({"sasl.jaas.config": f"{KRB5} {options};"})
    assert caught.value.key == "sasl.jaas.config"


def test_java_kinit_path_becomes_librdkafkas_command_and_a_command_is_kept(
    tmp_path: Path,
) -> None:
    jaas = f'{KRB5} useKeyTab=true keyTab="/k" principal="m@R";'
    out = admin({"sasl.jaas.config": jaas, "sasl.kerberos.kinit.cmd": "/opt/krb5/bin/kinit"})
    assert out["sasl.kerberos.kinit.cmd"] == (
        '/opt/krb5/bin/kinit -R -t "%{sasl.kerberos.keytab}" -k %{sasl.kerberos.principal} || '
        '/opt/krb5/bin/kinit -t "%{sasl.kerberos.keytab}" -k %{sasl.kerberos.principal}'
    )
    spaced = tmp_path / "krb 5" / "kinit"
    spaced.parent.mkdir()
    spaced.write_text("")
    out = admin({"sasl.jaas.config": jaas, "sasl.kerberos.kinit.cmd": str(spaced)})
    assert out["sasl.kerberos.kinit.cmd"].startswith(f"'{spaced}' -R -t ")
    command = "k5start -f %{sasl.kerberos.keytab} -U"
    out = admin({"sasl.jaas.config": jaas, "sasl.kerberos.kinit.cmd": command})
    assert out["sasl.kerberos.kinit.cmd"] == command


def test_java_ticket_renewal_tuning_is_not_reported_as_unsupported() -> None:
    result = translate_client_config(
        {
            "sasl.kerberos.ticket.renew.window.factor": "0.8",
            "sasl.kerberos.ticket.renew.jitter": "0.05",
            "sasl.kerberos.min.time.before.relogin": "60000",
        },
        "consumer",
    )
    assert result.unsupported == ()
    assert result.config["sasl.kerberos.min.time.before.relogin"] == "60000"


@pytest.mark.parametrize(
    ("settings", "needed"),
    [
        ({}, set()),
        ({"security.protocol": "ssl"}, {"ssl"}),
        ({"security.protocol": "sasl_plaintext"}, {"sasl_gssapi"}),  # Java's default mechanism
        (
            {"security.protocol": "SASL_SSL", "sasl.mechanisms": "SCRAM-SHA-512"},
            {"ssl", "sasl_scram"},
        ),
        (
            {
                "security.protocol": "sasl_ssl",
                "sasl.mechanisms": "OAUTHBEARER",
                "sasl.oauthbearer.method": "oidc",
            },
            {"ssl", "sasl_oauthbearer", "oidc"},
        ),
    ],
)
def test_required_features(settings: dict[str, str], needed: set[str]) -> None:
    assert set(required_features(settings)) == needed


def test_has_feature_asks_the_installed_librdkafka() -> None:
    assert has_feature("sasl_scram")
    assert has_feature("ssl")
    assert not has_feature("no_such_feature")


BASE = """clusters = primary, backup
primary.bootstrap.servers = p:9092
backup.bootstrap.servers = b:9092
primary->backup.enabled = true
backup.security.protocol = SASL_SSL
backup.sasl.mechanism = SCRAM-SHA-512
backup.sasl.jaas.config = org.apache.kafka.common.security.scram.ScramLoginModule required \\
    username="u" password="p";
"""


@pytest.fixture
def without_gssapi(monkeypatch: pytest.MonkeyPatch) -> None:
    """As the PyPI wheels are: every feature but sasl_gssapi."""

    def missing(settings: Mapping[str, str]) -> dict[str, str]:
        needed = required_features(settings)
        return {f: why for f, why in needed.items() if f == "sasl_gssapi"}

    monkeypatch.setattr(client_features, "missing_features", missing)


@pytest.mark.usefixtures("without_gssapi")
def test_a_mechanism_the_client_lacks_stops_the_start_naming_file_line_and_key(
    tmp_path: Path,
) -> None:
    path = tmp_path / "mm2.properties"
    path.write_text(
        BASE
        + "primary.security.protocol = SASL_PLAINTEXT\n"
        + "primary.consumer.sasl.mechanism = GSSAPI\n"
        + f'primary.sasl.jaas.config = {KRB5} useKeyTab=true keyTab="/k" principal="m@R";\n',
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as caught:
        require_client_features(load(path))
    error = caught.value
    assert (error.file, error.line, error.key) == (str(path), 10, "primary.consumer.sasl.mechanism")
    assert "GSSAPI is not built into this Kafka client" in str(error)
    assert "build-gssapi-client.sh" in str(error)
    assert "\n" not in str(error)


@pytest.mark.usefixtures("without_gssapi")
def test_the_default_mechanism_names_the_protocol_key_and_print_config_only_warns(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "mm2.properties"
    path.write_text(BASE + "primary.security.protocol = SASL_PLAINTEXT\n", encoding="utf-8")
    config = load(path)
    with pytest.raises(ConfigError) as caught:
        require_client_features(config)
    assert caught.value.key == "primary.security.protocol"  # not backup's sasl.mechanism
    assert "(sasl.mechanism defaults to GSSAPI)" in str(caught.value)
    with caplog.at_level(logging.WARNING):
        require_client_features(config, warn_only=True)
    assert "primary.security.protocol: GSSAPI" in caplog.text


@pytest.mark.usefixtures("without_gssapi")
def test_a_file_without_kerberos_passes(tmp_path: Path) -> None:
    path = tmp_path / "mm2.properties"
    path.write_text(BASE, encoding="utf-8")
    require_client_features(load(path))
