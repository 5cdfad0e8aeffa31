"""Java key and trust stores for tests, made the way Java users make them: a CA and certificates
from trustme, then JKS and PKCS12 stores written by Java's keytool (store and key passwords
differ in the JKS keystore, as keytool allows)."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

import trustme
from cryptography import x509
from cryptography.hazmat.primitives.serialization import (
    BestAvailableEncryption,
    Encoding,
    NoEncryption,
    PrivateFormat,
    load_pem_private_key,
    pkcs12,
)

STORE_PASSWORD = "store-secret-1"
KEY_PASSWORD = "key-secret-22"
TRUST_PASSWORD = "trust-secret-3"


@dataclass(frozen=True)
class Stores:
    ca: trustme.CA
    ca_pem: Path
    truststore_jks: Path
    truststore_p12: Path
    keystore_jks: Path
    keystore_p12: Path
    broker_pem: Path  # the broker's key and chain (Kafka reads PEM keystores)


def _keytool(*args: str) -> None:
    subprocess.run(
        ["keytool", "-J-Duser.language=en", *args],
        check=True,
        capture_output=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )


def make_stores(where: Path) -> Stores:
    ca = trustme.CA()
    ca_pem = where / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_pem))
    for kind, path in (("JKS", where / "truststore.jks"), ("PKCS12", where / "truststore.p12")):
        _keytool(
            "-importcert",
            "-noprompt",
            "-alias",
            "ca",
            "-file",
            str(ca_pem),
            "-keystore",
            str(path),
            "-storetype",
            kind,
            "-storepass",
            TRUST_PASSWORD,
        )
    client = ca.issue_cert("mirror-client")
    key = load_pem_private_key(client.private_key_pem.bytes(), password=None)
    chain = [c.bytes() for c in client.cert_chain_pems]
    certs = [x509.load_pem_x509_certificate(c) for c in chain]
    p12 = where / "keystore.p12"
    p12.write_bytes(
        pkcs12.serialize_key_and_certificates(
            b"client",
            key,  # type: ignore[arg-type]
            certs[0],
            certs[1:],
            BestAvailableEncryption(STORE_PASSWORD.encode()),
        )
    )
    jks = where / "keystore.jks"
    _keytool(
        "-importkeystore",
        "-noprompt",
        "-srckeystore",
        str(p12),
        "-srcstoretype",
        "PKCS12",
        "-srcstorepass",
        STORE_PASSWORD,
        "-srcalias",
        "client",
        "-destkeystore",
        str(jks),
        "-deststoretype",
        "JKS",
        "-deststorepass",
        STORE_PASSWORD,
        "-destkeypass",
        KEY_PASSWORD,
    )
    broker = ca.issue_cert("localhost", "127.0.0.1")
    broker_key = load_pem_private_key(broker.private_key_pem.bytes(), password=None)
    broker_pem = where / "broker.pem"  # Kafka's PEM keystores want the key as PKCS#8
    broker_pem.write_bytes(
        broker_key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
        + b"".join(c.bytes() for c in broker.cert_chain_pems)
    )
    for path in (ca_pem, jks, p12, broker_pem):
        path.chmod(0o600)
    return Stores(
        ca, ca_pem, where / "truststore.jks", where / "truststore.p12", jks, p12, broker_pem
    )
