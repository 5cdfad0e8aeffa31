"""HTTPS and HTTP Basic authentication of the REST API, with a real client against the CLI."""

from __future__ import annotations

import os
import signal
import socket
import ssl
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import trustme

from tests.support.kafka import Cluster

pytestmark = pytest.mark.e2e
EXTENSION = "org.apache.kafka.connect.rest.basic.auth.extension.BasicAuthSecurityRestExtension"


def trusting(ca: Path) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(ca))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def secured(
    primary: Cluster, backup: Cluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Path]]:
    """A mirror serving https with Basic auth; yields its URL and the CA file to trust."""
    d = tmp_path_factory.mktemp("secure")
    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(d / "ca.pem"))
    ca.issue_cert("127.0.0.1", "localhost").private_key_and_cert_chain_pem.write_to_path(
        str(d / "server.pem")
    )
    (d / "users.properties").write_text("alice: wonderland\nbob = builder\n")
    (d / "connect.jaas").write_text(
        "KafkaConnect {\n  org.apache.kafka.connect.rest.basic.auth.extension."
        f'PropertyFileLoginModule required\n  file="{d / "users.properties"}";\n}};\n'
    )
    port = free_port()
    props = d / "mm2.properties"
    props.write_text(
        f"""clusters = primary, backup
primary.bootstrap.servers = {primary.bootstrap_servers}
backup.bootstrap.servers = {backup.bootstrap_servers}
primary->backup.enabled = true
primary->backup.topics = secure-nothing-matches
replication.factor = 1
heartbeats.topic.replication.factor = 1
offset-syncs.topic.replication.factor = 1
checkpoints.topic.replication.factor = 1
mm2.state.dir = {d / "state"}
mm2.configs.topic = mm2-configs.{uuid.uuid4().hex[:12]}.internal
listeners = https://127.0.0.1:{port}
listeners.https.ssl.keystore.type = PEM
listeners.https.ssl.keystore.location = {d / "server.pem"}
rest.extension.classes = {EXTENSION}
java.security.auth.login.config = {d / "connect.jaas"}
"""
    )
    log = (d / "mirror.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "mm2.cli.mirror_maker", str(props)],
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    url = f"https://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert process.poll() is None, (d / "mirror.log").read_text()
            try:
                httpx.get(url + "/", verify=trusting(d / "ca.pem"), timeout=5)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, (d / "mirror.log").read_text()
                time.sleep(0.3)
        yield url, d / "ca.pem"
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            assert process.wait(90) == 0
        finally:
            if process.poll() is None:
                process.kill()
            log.close()


def test_known_users_are_let_in_over_tls(secured: tuple[str, Path]) -> None:
    url, ca = secured
    for user, password in (("alice", "wonderland"), ("bob", "builder")):
        response = httpx.get(url + "/connectors", auth=(user, password), verify=trusting(ca))
        assert response.status_code == 200
        assert "primary.backup.MirrorSourceConnector" in response.json()


def test_missing_or_wrong_credentials_are_refused(secured: tuple[str, Path]) -> None:
    url, ca = secured
    missing = httpx.get(url + "/connectors", verify=trusting(ca))
    assert missing.status_code == 401 and missing.json()["error_code"] == 401
    assert missing.headers["www-authenticate"].startswith("Basic")
    wrong = httpx.get(url + "/metrics", auth=("alice", "rabbit"), verify=trusting(ca))
    assert wrong.status_code == 401
    nobody = httpx.put(url + "/flows/primary/backup/pause", auth=("eve", "x"), verify=trusting(ca))
    assert nobody.status_code == 401


def test_untrusted_certificate_and_plain_http_fail(secured: tuple[str, Path]) -> None:
    url, _ = secured
    with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
        httpx.get(url + "/", auth=("alice", "wonderland"))
    with pytest.raises(httpx.TransportError):
        httpx.get(url.replace("https", "http") + "/", auth=("alice", "wonderland"))
