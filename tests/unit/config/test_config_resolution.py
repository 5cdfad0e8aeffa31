"""mm2.properties resolution against Apache's MirrorMakerConfigTest vectors."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from mm2.config import MirrorMakerConfig, load, load_properties, parse_properties
from mm2.config.resolve import cluster_pairs, cluster_props, connector_base_config, parse_clusters
from mm2.errors import ConfigError
from tests.support.paths import REPO

Props = dict[str, str]


def pairs(props: Props) -> list[tuple[str, str]]:
    return cluster_pairs(props, parse_clusters(props["clusters"]))


def test_properties_syntax() -> None:
    text = "a=1\n# c\n! c\nb : x\\\n   y\nc\\u0041 v\nd\na=2\ne\tf\n"
    f = parse_properties(text)
    assert f.values == {"a": "2", "b": "xy", "cA": "v", "d": "", "e": "f"}
    assert f.line_of("a") == 8
    assert f.line_of("cA") == 6


@pytest.mark.parametrize(
    ("props", "count"),
    [
        ({"clusters": "a, b, c"}, 6),
        ({"clusters": "a, b, c", "emit.heartbeats.enabled": "false"}, 0),
        (
            {
                "clusters": "a, b, c",
                "a->b.emit.heartbeats.enabled": "false",
                "a->c.emit.heartbeats.enabled": "false",
            },
            4,
        ),
        (
            {
                "clusters": "a, b, c, d, e, f",
                "emit.heartbeats.enabled": "false",
                "a->b.enabled": "true",
                "a->c.enabled": "true",
                "a->d.enabled": "true",
                "a->e.enabled": "false",
                "a->f.enabled": "false",
            },
            3,
        ),
        (
            {
                "clusters": "central, local_one, local_two, beats_emitter",
                "emit.heartbeats.enabled": "false",
                "central->local_one.enabled": "true",
                "central->local_two.enabled": "true",
                "beats_emitter->central.emit.heartbeats.enabled": "true",
            },
            3,
        ),
    ],
)
def test_cluster_pair_counts(props: Props, count: int) -> None:
    assert len(pairs(props)) == count


def test_cluster_properties_reach_connector() -> None:
    raw = {
        "clusters": "a, b",
        "a.bootstrap.servers": "servers-one",
        "b.bootstrap.servers": "servers-two",
        "security.protocol": "SSL",
        "replication.factor": "4",
    }
    c = connector_base_config(raw, "a", "b", "MirrorSourceConnector")
    assert c["source.cluster.bootstrap.servers"] == "servers-one"
    assert c["target.cluster.bootstrap.servers"] == "servers-two"
    assert c["security.protocol"] == "SSL"
    assert c["replication.factor"] == "4"
    assert c["enabled"] == "false"
    assert c["name"] == "MirrorSourceConnector"
    assert c["source.cluster.alias"] == "a"


def test_flow_override_and_unknown_keys_dropped() -> None:
    raw = {
        "clusters": "a, b",
        "a->b.tasks.max": "123",
        "tasks.max": "100",
        "topics": "topic-1",
        "xxx": "yyy",
        "use.defaults.from": "source",
        "metric.reporters": "FakeMetricsReporter",
    }
    c = connector_base_config(raw, "a", "b", "MirrorCheckpointConnector")
    assert c["tasks.max"] == "123"
    assert c["topics"] == "topic-1"
    assert c["metric.reporters"] == "FakeMetricsReporter"
    assert "xxx" not in c
    assert "use.defaults.from" not in c  # filter-level key: only s->t.use.defaults.from reaches it
    assert c["connector.class"] == "org.apache.kafka.connect.mirror.MirrorCheckpointConnector"


def test_client_precedence() -> None:
    raw = {
        "clusters": "a, b",
        "security.protocol": "SSL",
        "a.security.protocol": "PLAINTEXT",
        "a.producer.security.protocol": "SSL",
        "a.bootstrap.servers": "one:9092, two:9092",
        "ssl.truststore.password": "secret1",
        "a.xxx": "yyy",
    }
    props = cluster_props(raw, "a")
    assert props["admin.security.protocol"] == "PLAINTEXT"
    assert props["producer.security.protocol"] == "SSL"
    assert props["admin.bootstrap.servers"] == "one:9092, two:9092"
    assert props["admin.ssl.truststore.password"] == "secret1"
    assert "admin.xxx" not in props
    assert props["xxx"] == "yyy"


@pytest.fixture
def write(tmp_path: Path) -> Callable[[str], Path]:
    def make(text: str) -> Path:
        p = tmp_path / "mm2.properties"
        p.write_text(text, encoding="utf-8")
        return p

    return make


BASE = (
    "clusters = a, b\na.bootstrap.servers = a:1\nb.bootstrap.servers = b:1\na->b.enabled = true\n"
)


def test_load_typed_accessors(write: Callable[[str], Path]) -> None:
    cfg = load(write(BASE + "tasks.max = 3\nsync.topic.acls.enabled = false\na->b.topics = x.*\n"))
    assert isinstance(cfg, MirrorMakerConfig)
    flow = cfg.flow("a", "b")
    assert flow.enabled and not cfg.flow("b", "a").enabled
    assert flow.settings.source.tasks_max == 3
    assert flow.settings.source.sync_topic_acls_interval_seconds is None
    # Our default is seconds, not Apache's 600; an explicit value wins.
    assert flow.settings.source.refresh_topics_interval_seconds == 2
    slow = load(write(BASE + "refresh.topics.interval.seconds = 600\n")).flow("a", "b")
    assert slow.settings.source.refresh_topics_interval_seconds == 600
    assert flow.settings.checkpoint.sync_group_offsets_interval_seconds is None
    assert flow.topic_filter().should_replicate_topic("x1")
    assert not flow.topic_filter().should_replicate_topic("y")
    assert flow.replication_policy().format_remote_topic("a", "t") == "a.t"


def test_clients_in_librdkafka_terms(write: Callable[[str], Path]) -> None:
    text = BASE + (
        "a.security.protocol = SASL_SSL\n"
        "a.sasl.mechanism = SCRAM-SHA-512\n"
        "a.sasl.jaas.config = org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
        '    username="u" password="p";\n'
        "a.consumer.isolation.level = read_committed\n"
        "a.consumer.fetch.max.wait.ms = 50\n"
        "b.producer.max.request.size = 2000000\n"
        "b.producer.acks = 1\n"
    )
    flow = load(write(text)).flow("a", "b")
    consumer = flow.source_consumer_config()
    assert consumer["sasl.mechanisms"] == "SCRAM-SHA-512"
    assert consumer["sasl.username"] == "u" and consumer["sasl.password"] == "p"
    assert consumer["security.protocol"] == "sasl_ssl"
    assert consumer["isolation.level"] == "read_committed"
    assert consumer["fetch.wait.max.ms"] == "50"
    assert consumer["enable.auto.commit"] == "false"
    assert consumer["auto.offset.reset"] == "earliest"
    assert consumer["client.id"] == "a->b|MirrorSourceConnector|replication-consumer"
    producer = flow.target_producer_config()
    assert producer["message.max.bytes"] == "2000000"
    assert producer["acks"] == "1"
    assert flow.target_admin_config()["bootstrap.servers"] == "b:1"
    # As Java's clients do: a request goes out at once, not behind an unacknowledged one.
    assert consumer["socket.nagle.disable"] == producer["socket.nagle.disable"] == "true"


def test_kerberos_jaas(write: Callable[[str], Path]) -> None:
    text = BASE + (
        "a.security.protocol = SASL_PLAINTEXT\na.sasl.mechanism = GSSAPI\n"
        "a.sasl.jaas.config = com.sun.security.auth.module.Krb5LoginModule required "
        'useKeyTab=true keyTab="/k/mm2.keytab" principal="mm2@EX.COM" serviceName="kafka";\n'
    )
    c = load(write(text)).flow("a", "b").source_admin_config()
    assert c["sasl.kerberos.keytab"] == "/k/mm2.keytab"
    assert c["sasl.kerberos.principal"] == "mm2@EX.COM"
    assert c["sasl.kerberos.service.name"] == "kafka"


def test_unsupported_settings_warn_once_or_fail_strict(write: Callable[[str], Path]) -> None:
    path = write(BASE + "a.consumer.max.poll.records = 10\nb.producer.max.block.ms = 5\n")
    cfg = load(path)
    joined = [w for w in cfg.warnings if "no librdkafka equivalent" in w]
    assert len(joined) == 1
    assert "source.consumer.max.poll.records" in joined[0]
    assert "target.producer.max.block.ms" in joined[0]
    with pytest.raises(ConfigError, match=r"max\.poll\.records"):
        load(path, strict=True)


def test_clusters_option_keeps_targets(write: Callable[[str], Path]) -> None:
    cfg = load(write(BASE + "clusters = a, b, c\nc.bootstrap.servers = c:1\n"), clusters=["b"])
    assert {(f.source, f.target) for f in cfg.flows} == {("a", "b"), ("c", "b")}


def test_providers(
    write: Callable[[str], Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secrets = tmp_path / "s.properties"
    secrets.write_text("pw = secret2\n", encoding="utf-8")
    monkeypatch.setenv("MM2_TEST_SERVERS", "env:9")
    kafka = "org.apache.kafka.common.config.provider."
    text = BASE.replace("a:1", "${env:MM2_TEST_SERVERS}") + (
        "config.providers = env, file\n"
        f"config.providers.env.class = {kafka}EnvVarConfigProvider\n"
        f"config.providers.file.class = {kafka}FileConfigProvider\n"
        f"ssl.key.password = ${{file:{secrets}:pw}}\n"
    )
    flow = load(write(text)).flow("a", "b")
    assert flow.connectors["MirrorSourceConnector"]["ssl.key.password"].startswith("${file:")
    assert flow.connector_config()["ssl.key.password"] == "secret2"
    assert flow.source_admin_config()["bootstrap.servers"] == "env:9"
    assert flow.source_admin_config()["ssl.key.password"] == "secret2"


def test_deprecated_names_warn(write: Callable[[str], Path]) -> None:
    cfg = load(write(BASE + "topics.blacklist = t3\na->b.groups.blacklist = g\n"))
    assert any("topics.blacklist is deprecated; use topics.exclude" in w for w in cfg.warnings)
    assert any(
        "a->b.groups.blacklist is deprecated; use a->b.groups.exclude" in w for w in cfg.warnings
    )
    assert not cfg.flow("a", "b").topic_filter().should_replicate_topic("t3")
    assert not cfg.flow("a", "b").group_filter().should_replicate_group("g")


def test_example_file_parses() -> None:
    example = REPO / "mm2.properties.example"
    cfg = load(example)
    flow = cfg.flow("primary", "backup")
    assert flow.enabled and flow.settings.source.tasks_max == 4
    assert flow.topic_filter().should_replicate_topic("orders-eu")
    assert not flow.topic_filter().should_replicate_topic("inventory")
    assert not flow.config_property_filter().should_replicate_config_property("min.insync.replicas")


def test_load_properties_from_text() -> None:
    cfg = load_properties(parse_properties(BASE))
    assert [f.name for f in cfg.flows] == ["a->b", "b->a"]
