"""Secured clusters end to end: connect-mirror-maker mirrors from a broker that wants Kerberos
(SASL GSSAPI, a local MIT KDC), from one that wants SCRAM-SHA-512 over TLS, to one that wants a
client certificate (mutual TLS), with the settings written the Java way in mm2.properties.

Kerberos needs a confluent-kafka built with libsasl2: `make test` builds one (cached) and
installs it beside the virtualenv's in `<venv>/gssapi-client`, which the Kerberos mirror gets on
its PYTHONPATH. Without it that test fails and says how to get it; it is never skipped.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import trustme
from confluent_kafka import Producer
from confluent_kafka.cimpl import NewTopic
from cryptography.hazmat.primitives import serialization

from mm2.kafka.features import has_feature
from mm2.localcluster import (
    BrokerTls,
    LocalCluster,
    LocalClusters,
    LocalKdc,
    gssapi_listener,
    mutual_tls_listener,
    scram_listener,
)
from tests.support.kafka import Cluster, admin_client, count, read_topic
from tests.support.mirror import MirrorProcess, write_properties
from tests.support.waiting import eventually

GSSAPI_CLIENT = Path(sys.prefix) / "gssapi-client"
RECORDS = 200
SCRAM_USER, SCRAM_PASSWORD = "mirror", "mirror-secret-512"


@dataclass(frozen=True)
class Pki:
    """PEM files: the CA, the brokers' key and chain, the mirror's key and chain."""

    ca: Path
    broker: Path
    client: Path


@dataclass(frozen=True)
class Secured:
    kdc: LocalKdc
    mirror_keytab: Path
    pki: Pki
    source: LocalCluster  # SASL_PLAINTEXT (GSSAPI) and SASL_SSL (SCRAM-SHA-512) listeners
    target: LocalCluster  # an SSL listener that requires a client certificate


def _key_and_chain(cert: trustme.LeafCert, path: Path) -> Path:
    """A PEM keystore as Kafka and librdkafka read it: the key as PKCS#8, then the chain."""
    key = serialization.load_pem_private_key(cert.private_key_pem.bytes(), password=None)
    pkcs8 = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    path.write_bytes(pkcs8 + b"".join(blob.bytes() for blob in cert.cert_chain_pems))
    return path


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    base = tmp_path_factory.mktemp("secured")
    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(base / "ca.pem"))
    pki = Pki(
        ca=base / "ca.pem",
        broker=_key_and_chain(ca.issue_cert("localhost", "127.0.0.1"), base / "broker.pem"),
        client=_key_and_chain(ca.issue_cert("mirror.mm2.test"), base / "mirror.pem"),
    )
    tls = BrokerTls(keystore=pki.broker, truststore=pki.ca)
    with LocalKdc(workdir=base / "kdc") as kdc:
        service = "kafka/localhost"
        kerberos = gssapi_listener(
            krb5_conf=kdc.krb5_conf,
            keytab=kdc.add_principal(service),
            principal=kdc.principal(service),
        )
        mirror_keytab = kdc.add_principal("mirror")
        source = LocalCluster(
            "secured-source",
            secure=[kerberos, scram_listener(users={SCRAM_USER: SCRAM_PASSWORD}, tls=tls)],
        )
        target = LocalCluster("mtls-target", secure=[mutual_tls_listener(tls=tls)])
        with LocalClusters.of([source, target]):
            yield Secured(kdc, mirror_keytab, pki, source, target)


def _topic_with_records(cluster: LocalCluster, prefix: str) -> str:
    """A 3-partition topic on `cluster` (through its PLAINTEXT listener) with RECORDS records."""
    topic = f"{prefix}-{uuid.uuid4().hex[:8]}"
    admin = admin_client(cluster.client_config())
    admin.create_topics([NewTopic(topic, 3, 1)])[topic].result(60)
    producer = Producer(cluster.client_config())
    for i in range(RECORDS):
        producer.produce(topic, f"value-{i}".encode(), f"k{i}".encode(), partition=i % 3)
    assert producer.flush(30) == 0
    return topic


def _same_records(source: str, topic: str, target: str) -> None:
    want = read_topic(source, topic)
    got = read_topic(target, f"primary.{topic}")
    for partition, records in want.items():
        assert [r[1:3] for r in got[partition]] == [r[1:3] for r in records], partition


def _refusal(config: dict[str, str]) -> str:
    """What a client with these settings is told when it connects (empty if nothing within
    20 s): the listeners must keep strangers out, or the mirror tests would prove nothing."""
    errors: list[str] = []
    admin = admin_client({**config, "log_level": 0, "error_cb": lambda e: errors.append(e.str())})
    deadline = time.monotonic() + 20
    while not errors and time.monotonic() < deadline:
        admin.poll(0.2)  # the client connects at once; its errors come through poll()
    return " | ".join(errors)


def _require_gssapi_client() -> None:
    if not (GSSAPI_CLIENT / "confluent_kafka").is_dir():
        pytest.fail(
            f"no GSSAPI-capable confluent-kafka in {GSSAPI_CLIENT}: run `make gssapi-client` "
            "(make test does; it needs root for apt-get, or the Debian packages the Makefile "
            "names already installed)",
            pytrace=False,
        )


@pytest.mark.integration
@pytest.mark.slow
def test_kerberos_source_mirrors_to_a_plain_target(
    secured: Secured, backup: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _require_gssapi_client()
    source = secured.source
    topic = _topic_with_records(source, "krb")
    realm = secured.kdc.realm
    props = write_properties(
        tmp_path,
        source.listeners["SASL_PLAINTEXT"],  # localhost:<port>, as kafka/localhost says
        backup.bootstrap_servers,
        topic,
        # A source cluster of its own mirrored into the session's backup, whose
        # mm2-offsets.primary.internal holds the session primary's positions: its own topic.
        extra=f"""
offset.storage.topic = mm2-offsets.kerberos-{uuid.uuid4().hex[:8]}.internal
primary.security.protocol = SASL_PLAINTEXT
primary.sasl.mechanism = GSSAPI
primary.sasl.kerberos.service.name = kafka
primary.sasl.jaas.config = com.sun.security.auth.module.Krb5LoginModule required \\
    useKeyTab=true storeKey=true keyTab="{secured.mirror_keytab}" principal="mirror@{realm}";
""",
    )
    # What an operator sets for librdkafka's Kerberos: the realm's krb5.conf and a ticket
    # cache of the mirror's own; and the GSSAPI-capable client ahead of the venv's.
    monkeypatch.setenv("KRB5_CONFIG", str(secured.kdc.krb5_conf))
    monkeypatch.setenv("KRB5CCNAME", f"FILE:{tmp_path / 'krb5cc'}")
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(p for p in (str(GSSAPI_CLIENT), os.getenv("PYTHONPATH")) if p)
    )
    remote = f"primary.{topic}"
    with MirrorProcess(props) as mirror:
        eventually(
            lambda: count(backup.bootstrap_servers, remote) >= RECORDS,
            timeout=240,
            what=remote,
            log=mirror.log,
        )
        assert mirror.stop() == 0, mirror.log()[-3000:]
    _same_records(source.bootstrap_servers, topic, backup.bootstrap_servers)
    # The mirror logged in from its keytab and got tickets for the broker's service.
    kdc_log = secured.kdc.log_path.read_text(encoding="utf-8", errors="replace")
    assert f"mirror@{realm} for krbtgt/{realm}@{realm}" in kdc_log
    assert f"mirror@{realm} for kafka/localhost@{realm}" in kdc_log


@pytest.mark.integration
@pytest.mark.slow
def test_scram_over_tls_source_mirrors_to_a_mutual_tls_target(
    secured: Secured, tmp_path: Path
) -> None:
    source, target, pki = secured.source, secured.target, secured.pki
    scram = {
        "bootstrap.servers": source.listeners["SASL_SSL"],
        "security.protocol": "sasl_ssl",
        "sasl.mechanisms": "SCRAM-SHA-512",
        "sasl.username": SCRAM_USER,
        "ssl.ca.location": str(pki.ca),
    }
    mtls = {
        "bootstrap.servers": target.listeners["SSL"],
        "security.protocol": "ssl",
        "ssl.ca.location": str(pki.ca),
    }
    # The listeners keep strangers out: a wrong password, no client certificate.
    assert "invalid credentials" in _refusal({**scram, "sasl.password": "not-the-password"})
    refusal = _refusal(mtls)  # the JVM alerts "bad certificate"; TLS 1.3 also has the other
    assert "bad certificate" in refusal or "certificate required" in refusal, refusal
    topic = _topic_with_records(source, "scram")
    props = write_properties(
        tmp_path,
        source.listeners["SASL_SSL"],
        target.listeners["SSL"],
        topic,
        extra=f"""
primary.security.protocol = SASL_SSL
primary.sasl.mechanism = SCRAM-SHA-512
primary.sasl.jaas.config = org.apache.kafka.common.security.scram.ScramLoginModule required \\
    username="{SCRAM_USER}" password="{SCRAM_PASSWORD}";
primary.ssl.truststore.type = PEM
primary.ssl.truststore.location = {pki.ca}
backup.security.protocol = SSL
backup.ssl.truststore.type = PEM
backup.ssl.truststore.location = {pki.ca}
backup.ssl.keystore.type = PEM
backup.ssl.keystore.location = {pki.client}
""",
    )
    remote = f"primary.{topic}"
    with MirrorProcess(props) as mirror:
        eventually(
            lambda: count(target.bootstrap_servers, remote) >= RECORDS,
            timeout=240,
            what=remote,
            log=mirror.log,
        )
        assert mirror.stop() == 0, mirror.log()[-3000:]
    _same_records(source.bootstrap_servers, topic, target.bootstrap_servers)


@pytest.mark.e2e
def test_kerberos_with_a_client_without_gssapi_stops_with_one_line(tmp_path: Path) -> None:
    if has_feature("sasl_gssapi"):
        pytest.skip("this virtualenv's own confluent-kafka has GSSAPI: nothing to refuse")
    keytab = tmp_path / "mirror.keytab"
    keytab.write_bytes(b"")
    props = write_properties(
        tmp_path,
        "localhost:9",
        "127.0.0.1:9",
        "t",
        extra=f"""
primary.security.protocol = SASL_PLAINTEXT
primary.sasl.mechanism = GSSAPI
primary.sasl.jaas.config = com.sun.security.auth.module.Krb5LoginModule required \\
    useKeyTab=true keyTab="{keytab}" principal="mirror@MM2.TEST";
""",
    )
    line_no = props.read_text().splitlines().index("primary.sasl.mechanism = GSSAPI") + 1

    def run(*args: str, pythonpath: str | None = None) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        if pythonpath is not None:
            env["PYTHONPATH"] = pythonpath
        command = [sys.executable, "-m", "mm2.cli.mirror_maker", *args, str(props)]
        return subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)

    started = run()
    assert started.returncode == 2, started.stderr
    lines = started.stderr.strip().splitlines()
    assert len(lines) == 1, started.stderr
    assert f"{props}:{line_no}: primary.sasl.mechanism: GSSAPI" in lines[0]
    assert "scripts/build-gssapi-client.sh" in lines[0]
    # --print-config may run on another host than the mirror: it warns and prints the flows.
    printed = run("--print-config")
    assert printed.returncode == 0, printed.stderr
    assert "primary.sasl.mechanism: GSSAPI is not built into this Kafka client" in printed.stderr
    assert '"flows"' in printed.stdout
    # With the GSSAPI-capable build on the path, the same file passes the check.
    _require_gssapi_client()
    capable = run("--print-config", pythonpath=str(GSSAPI_CLIENT))
    assert capable.returncode == 0, capable.stderr
    assert "GSSAPI" not in capable.stderr, capable.stderr
