"""JKS and PKCS12 keystores and truststores, with their passwords, as Apache accepts them: read at
start into PEM for librdkafka, never logged; a missing store stops the start but only warns in
--print-config."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from confluent_kafka import Producer
from cryptography import x509
from cryptography.hazmat.primitives.serialization import load_pem_private_key

from mm2.cli.mirror_maker import main
from mm2.config import load
from mm2.errors import ConfigError
from tests.support.stores import KEY_PASSWORD, STORE_PASSWORD, TRUST_PASSWORD, Stores, make_stores

ACCEPTED = Path(__file__).parent / "accepted_configs"
BASE = (
    "clusters = a, b\na.bootstrap.servers = a:1\nb.bootstrap.servers = b:1\na->b.enabled = true\n"
)
SECRETS = (STORE_PASSWORD, KEY_PASSWORD, TRUST_PASSWORD)


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Stores:
    return make_stores(tmp_path_factory.mktemp("stores"))


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "mm2.properties"
    path.write_text(BASE + text, encoding="utf-8")
    return path


def _jks_both(stores: Stores) -> str:
    return (
        "a.security.protocol = SSL\n"
        f"a.ssl.truststore.location = {stores.truststore_jks}\n"
        f"a.ssl.truststore.password = {TRUST_PASSWORD}\n"
        f"a.ssl.keystore.location = {stores.keystore_jks}\n"
        f"a.ssl.keystore.password = {STORE_PASSWORD}\n"
        f"a.ssl.key.password = {KEY_PASSWORD}\n"
    )


@pytest.mark.system
def test_jks_stores_become_pem(
    tmp_path: Path, stores: Stores, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    config = load(write(tmp_path, _jks_both(stores))).flow("a", "b").source_consumer_config()
    assert config["ssl.ca.pem"].strip() == stores.ca_pem.read_text().strip()
    chain = x509.load_pem_x509_certificates(config["ssl.certificate.pem"].encode())
    names = chain[0].extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["mirror-client"]
    assert "ENCRYPTED PRIVATE KEY" in config["ssl.key.pem"]
    key = load_pem_private_key(config["ssl.key.pem"].encode(), config["ssl.key.password"].encode())
    assert key.public_key() == chain[0].public_key()
    for secret in SECRETS:
        assert secret not in caplog.text
    # librdkafka takes them: a client with these settings is created (it reads them at once).
    Producer({k: v for k, v in config.items() if k != "enable.auto.commit"}).flush(0)


@pytest.mark.system
def test_pkcs12_truststore_and_keystore(tmp_path: Path, stores: Stores) -> None:
    text = (
        "b.security.protocol = SSL\n"
        f"b.ssl.truststore.type = PKCS12\nb.ssl.truststore.location = {stores.truststore_p12}\n"
        f"b.ssl.truststore.password = {TRUST_PASSWORD}\n"
        f"b.ssl.keystore.type = PKCS12\nb.ssl.keystore.location = {stores.keystore_p12}\n"
        f"b.ssl.keystore.password = {STORE_PASSWORD}\n"
    )
    config = load(write(tmp_path, text)).flow("a", "b").target_producer_config()
    assert config["ssl.ca.pem"].strip() == stores.ca_pem.read_text().strip()
    assert "ssl.keystore.location" not in config
    key = load_pem_private_key(config["ssl.key.pem"].encode(), STORE_PASSWORD.encode())
    chain = x509.load_pem_x509_certificates(config["ssl.certificate.pem"].encode())
    assert key.public_key() == chain[0].public_key()
    Producer(dict(config)).flush(0)


@pytest.mark.system
@pytest.mark.parametrize(
    ("text", "key"),
    [
        (
            "a.ssl.truststore.location = {ts}\na.ssl.truststore.password = wrong-password\n",
            "a.ssl.truststore.location",
        ),
        (
            "a.ssl.keystore.location = {ks}\na.ssl.keystore.password = wrong-password\n",
            "a.ssl.keystore.location",
        ),
        (
            "a.ssl.keystore.location = {ks}\na.ssl.keystore.password = "
            + STORE_PASSWORD
            + "\na.ssl.key.password = wrong-password\n",
            "a.ssl.keystore.location",
        ),
        (
            "a.ssl.truststore.type = PKCS12\na.ssl.truststore.location = {ca}\n",
            "a.ssl.truststore.location",
        ),
    ],
)
def test_unreadable_store_names_key_and_file(
    tmp_path: Path, stores: Stores, text: str, key: str
) -> None:
    body = text.format(ts=stores.truststore_jks, ks=stores.keystore_jks, ca=stores.ca_pem)
    path = write(tmp_path, "a.security.protocol = SSL\n" + body)
    with pytest.raises(ConfigError) as err:
        load(path)
    message = str(err.value)
    assert message.startswith(f"{path}:")
    assert f": {key}: cannot read " in message
    assert "\n" not in message
    assert "wrong-password" not in message and STORE_PASSWORD not in message


def test_accepted_corpus_loads(caplog: pytest.LogCaptureFixture) -> None:
    # Today's stores that are not on this host: --print-config loads them and warns.
    for path in sorted(ACCEPTED.glob("*.properties")):
        config = load(path, check_files=False)
        assert config.enabled_flows, path


@pytest.mark.parametrize("name", ["jks_keystore.properties", "jks_truststore.properties"])
def test_missing_store_warns_in_print_config_and_stops_the_start(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = ACCEPTED / name
    assert main([str(path), "--print-config"]) == 0
    err = capsys.readouterr().err
    assert "ssl." in err and "/etc/mm2/" in err and "cannot read" in err
    assert main([str(path)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"connect-mirror-maker: error: {path}:")
    assert "/etc/mm2/" in lines[0]
