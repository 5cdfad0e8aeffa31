"""Secured listeners for local brokers: the broker settings, JVM options and format arguments
each builder brings, and how LocalCluster adds them beside its own listeners."""

from __future__ import annotations

from pathlib import Path

import pytest

from mm2.errors import ClusterError
from mm2.localcluster import (
    BrokerTls,
    LocalCluster,
    gssapi_listener,
    mutual_tls_listener,
    scram_listener,
)
from mm2.localcluster.security import listener_settings


@pytest.fixture
def tls(tmp_path: Path) -> BrokerTls:
    (tmp_path / "broker.pem").write_text("key and chain")
    (tmp_path / "ca.pem").write_text("ca")
    return BrokerTls(keystore=tmp_path / "broker.pem", truststore=tmp_path / "ca.pem")


def test_gssapi_listener_is_advertised_under_the_principals_host(tmp_path: Path) -> None:
    (tmp_path / "krb5.conf").write_text("")
    (tmp_path / "kafka.keytab").write_bytes(b"")
    listener = gssapi_listener(
        krb5_conf=tmp_path / "krb5.conf",
        keytab=tmp_path / "kafka.keytab",
        principal="kafka/localhost@MM2.TEST",
    )
    assert (listener.protocol, listener.host, listener.mechanism) == (
        "SASL_PLAINTEXT",
        "localhost",
        "GSSAPI",
    )
    jaas = listener.broker_config["listener.name.sasl_plaintext.gssapi.sasl.jaas.config"]
    assert 'principal="kafka/localhost@MM2.TEST"' in jaas
    assert f'keyTab="{tmp_path / "kafka.keytab"}"' in jaas
    assert listener.jvm_options == (f"-Djava.security.krb5.conf={tmp_path / 'krb5.conf'}",)
    with pytest.raises(ClusterError, match="kafka/HOST@REALM"):
        gssapi_listener(
            krb5_conf=tmp_path / "krb5.conf",
            keytab=tmp_path / "kafka.keytab",
            principal="kafka@MM2.TEST",
        )


def test_scram_users_are_created_when_storage_is_formatted(tls: BrokerTls) -> None:
    listener = scram_listener(users={"mirror": "s3cret", "reader": "r"}, tls=tls)
    assert listener.format_arguments == (
        "--add-scram",
        "SCRAM-SHA-512=[name=mirror,password=s3cret]",
        "--add-scram",
        "SCRAM-SHA-512=[name=reader,password=r]",
    )
    config = listener.broker_config
    assert config["listener.name.sasl_ssl.sasl.enabled.mechanisms"] == "SCRAM-SHA-512"
    assert config["listener.name.sasl_ssl.ssl.client.auth"] == "none"
    with pytest.raises(ClusterError, match="letters, digits"):
        scram_listener(users={"mirror": "a,b]"}, tls=tls)
    with pytest.raises(ClusterError, match="SCRAM mechanism"):
        scram_listener(users={"mirror": "p"}, tls=tls, mechanism="SCRAM-SHA-1")


def test_mutual_tls_requires_a_client_certificate(tls: BrokerTls, tmp_path: Path) -> None:
    config = mutual_tls_listener(tls=tls).broker_config
    assert config["listener.name.ssl.ssl.client.auth"] == "required"
    assert config["listener.name.ssl.ssl.truststore.type"] == "PEM"
    with pytest.raises(ClusterError, match="no such PEM file"):
        mutual_tls_listener(tls=BrokerTls(tmp_path / "missing.pem", tls.truststore))


def test_secured_listeners_join_the_plaintext_and_controller_ones(tls: BrokerTls) -> None:
    secure = [scram_listener(users={"u": "p"}, tls=tls), mutual_tls_listener(tls=tls)]
    listeners, config, jvm, arguments = listener_settings(
        "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0", secure
    )
    assert listeners == (
        "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0,SASL_SSL://127.0.0.1:0,SSL://127.0.0.1:0"
    )
    assert "listener.name.ssl.ssl.client.auth" in config
    assert jvm == ()
    assert arguments[0] == "--add-scram"
    with pytest.raises(ClusterError, match="one secured listener per protocol"):
        listener_settings("PLAINTEXT://:0", [mutual_tls_listener(tls=tls)] * 2)
    with pytest.raises(ClusterError, match="both in `listeners` and secured"):
        listener_settings("SSL://:0", [mutual_tls_listener(tls=tls)])


def test_local_cluster_keeps_plaintext_for_its_probe_and_lists_the_secured_listener(
    tls: BrokerTls, tmp_path: Path
) -> None:
    cluster = LocalCluster("s", workdir=tmp_path / "s", secure=[mutual_tls_listener(tls=tls)])
    (tmp_path / "s" / "data").mkdir(parents=True)
    cluster._layout_ports()  # what start() does first: ports picked, server.properties written
    assert set(cluster.listeners) == {"PLAINTEXT", "CONTROLLER", "SSL"}
    assert cluster.bootstrap_servers == cluster.listeners["PLAINTEXT"]
    assert "SSL:SSL" in cluster.properties["listener.security.protocol.map"].split(",")
    assert "ssl.client.auth=required" in (tmp_path / "s" / "server.properties").read_text()
