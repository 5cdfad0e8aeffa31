"""MirrorMaker 1's command line: flags and client files to one mm2 flow, refusals, and the
mm2.properties `mm2 migrate-mm1` prints (which must load as connect-mirror-maker loads it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mm2.cli import kafka_mirror_maker, tools
from mm2.config import load_properties, parse_properties
from mm2.config.mm1 import IDENTITY_POLICY, MirrorMaker1Options, migrate, mm1_regex
from mm2.config.model import CHECKPOINT, SOURCE
from mm2.errors import ConfigError

# Seed 002's files (a Chinese MirrorMaker 1 guide), with its "keep data intact" settings.
SEED_CONSUMER = """\
# Consumer Target Cluster
bootstrap.servers=kafka-a:9092,kafka-b:9092
group.id=mm-test-consumer-group
auto.offset.reset=earliest
heartbeat.interval.ms=30000
session.timeout.ms=100000
partition.assignment.strategy=org.apache.kafka.clients.consumer.RoundRobinAssignor
max.poll.records=20000
receive.buffer.bytes=4194304
max.partition.fetch.bytes=10485760
enable.auto.commit=false
"""
SEED_PRODUCER = """\
bootstrap.servers=kafka-to:9092
compression.type=snappy
max.in.flight.requests.per.connection=1
retries=Integer.MAX_VALUE
max.block.ms=Long.MAX_VALUE
"""
# Seeds 000 and 001 (Hortonworks): the ZooKeeper-era consumer file.
ZK_CONSUMER = """\
zk.connect=hdp1:2181/kafka
zk.connectiontimeout.ms=1000000
consumer.timeout.ms=-1
groupid=dp-MirrorMaker-test-datapl
shallow.iterator.enable=true
mirror.topics.whitelist=app_log
"""
GROUP = "mm-test-consumer-group"
SRC, DST = f"{GROUP}-source", f"{GROUP}-target"


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    consumer, producer = tmp_path / "c.properties", tmp_path / "p.properties"
    consumer.write_text(SEED_CONSUMER, encoding="utf-8")
    producer.write_text(SEED_PRODUCER, encoding="utf-8")
    return consumer, producer


def options(files: tuple[Path, Path], **kw: object) -> MirrorMaker1Options:
    given: dict[str, object] = {"include": ".*", **kw}
    return MirrorMaker1Options(str(files[0]), str(files[1]), **given)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("given", "regex"),
    [
        ("topic1, topic2", "topic1|topic2"),
        ('".*"', ".*"),
        ("'orders.*'", "orders.*"),
        ("  testtopic ", "testtopic"),
        ("a|b", "a|b"),
    ],
)
def test_whitelist_read_as_mirror_maker_1_reads_it(given: str, regex: str) -> None:
    assert mm1_regex(given) == regex


def test_seed_command_line_maps_to_one_mm1_flow(files: tuple[Path, Path]) -> None:
    migration = migrate(options(files, include="topic1, topic2", num_streams=4))
    values = migration.values()
    assert values["clusters"] == f"{SRC}, {DST}"
    assert values[f"{SRC}->{DST}.enabled"] == "true"
    assert values[f"{SRC}.bootstrap.servers"] == "kafka-a:9092,kafka-b:9092"
    assert values[f"{DST}.bootstrap.servers"] == "kafka-to:9092"
    assert values["replication.policy.class"] == IDENTITY_POLICY
    assert values["topics"] == "topic1|topic2"
    assert values["tasks.max"] == "4"
    assert values["progress.group.id"] == GROUP
    assert values["progress.group.commit.interval.ms"] == "60000"
    for off in ("emit.heartbeats", "emit.checkpoints", "emit.offset-syncs", "sync.topic.acls"):
        assert values[f"{off}.enabled"] == "false"
    assert values[f"{SRC}.consumer.auto.offset.reset"] == "earliest"
    assert values[f"{SRC}.consumer.max.poll.records"] == "20000"
    assert values[f"{DST}.producer.compression.type"] == "snappy"
    assert values[f"{DST}.producer.retries"] == "2147483647"
    # Group membership and auto-commit mean nothing to copy tasks: dropped, and said so.
    assert f"{SRC}.consumer.session.timeout.ms" not in values
    assert f"{SRC}.consumer.enable.auto.commit" not in values
    text = migration.text()
    assert "dropped " in text and "partition.assignment.strategy" in text
    assert any("Integer.MAX_VALUE" in w for w in migration.warnings)


def test_written_file_loads_as_the_flow_mirror_maker_1_ran(files: tuple[Path, Path]) -> None:
    migration = migrate(options(files, include="orders.*", num_streams=2))
    config = load_properties(parse_properties(migration.text(), "mm1.properties"))
    [flow] = config.enabled_flows
    assert (flow.source, flow.target) == (SRC, DST)
    assert flow.replication_policy().format_remote_topic(SRC, "orders.eu") == "orders.eu"
    assert flow.topic_filter().should_replicate_topic("orders.eu")
    assert not flow.topic_filter().should_replicate_topic("payments")
    assert flow.settings.source.tasks_max == 2
    assert flow.settings.checkpoint.emit_checkpoints_interval_seconds is None
    assert flow.settings.heartbeat.emit_heartbeats_interval_seconds is None
    assert flow.connectors[SOURCE]["progress.group.id"] == GROUP
    assert flow.connectors[CHECKPOINT]["emit.checkpoints.enabled"] == "false"
    assert flow.source_consumer_config()["max.partition.fetch.bytes"] == "10485760"
    assert flow.target_producer_config()["compression.type"] == "snappy"


def test_secrets_stay_in_the_client_file(tmp_path: Path, files: tuple[Path, Path]) -> None:
    jaas = (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        'username="mirror" password="s3cret-pw";'
    )
    consumer = files[0]
    consumer.write_text(
        SEED_CONSUMER
        + f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config={jaas}\n",
        encoding="utf-8",
    )
    migration = migrate(options(files))
    assert "s3cret-pw" not in migration.text()
    config = load_properties(parse_properties(migration.text(), "mm1.properties"))
    [flow] = config.enabled_flows
    consumer_config = flow.source_consumer_config()
    assert consumer_config["security.protocol"] == "sasl_plaintext"
    assert consumer_config["sasl.password"] == "s3cret-pw"
    # cluster-wide: the source admin (topic listing, group commits) logs in too
    assert flow.source_admin_config()["sasl.username"] == "mirror"


def test_mirror_maker_1_defaults_where_the_files_are_silent(tmp_path: Path) -> None:
    consumer, producer = tmp_path / "c.properties", tmp_path / "p.properties"
    consumer.write_text("bootstrap.servers=a:9092\ngroup.id=mirrorgroup\n", encoding="utf-8")
    producer.write_text("metadata.broker.list=b:9092\ncompression.codec=2\n", encoding="utf-8")
    migration = migrate(MirrorMaker1Options(str(consumer), str(producer), include="testtopic"))
    values = migration.values()
    # the Java consumer's default, which MirrorMaker 1 kept
    assert values["mirrorgroup-source.consumer.auto.offset.reset"] == "latest"
    assert values["mirrorgroup-target.bootstrap.servers"] == "b:9092"
    assert values["mirrorgroup-target.producer.compression.type"] == "snappy"
    assert values["skip.oversized.records"] == "false"
    assert any("metadata.broker.list" in w for w in migration.warnings)


def test_abort_on_send_failure_false_skips_oversized_records_and_says_what_not(
    files: tuple[Path, Path],
) -> None:
    migration = migrate(options(files, abort_on_send_failure=False))
    assert migration.values()["skip.oversized.records"] == "true"
    assert any("still stop the copy task" in w for w in migration.warnings)


def test_set_overrides_in_place_and_adds(files: tuple[Path, Path]) -> None:
    migration = migrate(
        options(files, overrides=(("emit.checkpoints.enabled", "true"), ("listeners", "x")))
    )
    values = migration.values()
    assert values["emit.checkpoints.enabled"] == "true"
    assert values["listeners"] == "x"
    assert list(values).count("emit.checkpoints.enabled") == 1


def test_zookeeper_consumer_file_is_refused_at_its_line(tmp_path: Path) -> None:
    consumer, producer = tmp_path / "c.properties", tmp_path / "p.properties"
    consumer.write_text(ZK_CONSUMER, encoding="utf-8")
    producer.write_text("bootstrap.servers=b:9092\n", encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        migrate(MirrorMaker1Options(str(consumer), str(producer), include="app_log"))
    assert err.value.file == str(consumer) and err.value.line == 1
    assert err.value.key == "zk.connect"
    assert "add bootstrap.servers" in str(err.value)


def test_consumer_file_without_group_is_refused(tmp_path: Path) -> None:
    consumer, producer = tmp_path / "c.properties", tmp_path / "p.properties"
    consumer.write_text("bootstrap.servers=a:9092\n", encoding="utf-8")
    producer.write_text("bootstrap.servers=b:9092\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"c\.properties: group\.id: no group\.id"):
        migrate(MirrorMaker1Options(str(consumer), str(producer), include=".*"))


def test_problem_in_a_client_file_names_its_line(files: tuple[Path, Path]) -> None:
    files[0].write_text(SEED_CONSUMER.replace("20000", "lots"), encoding="utf-8")
    migration = migrate(options(files))
    with pytest.raises(ConfigError) as err:
        kafka_mirror_maker.checked(migration, "generated.properties")
    assert (err.value.file, err.value.line, err.value.key) == (str(files[0]), 8, "max.poll.records")


def test_invalid_whitelist_is_refused_at_the_flag(files: tuple[Path, Path]) -> None:
    # seed 002's whitelist: a Java regex cannot start with *, MirrorMaker 1 refused it too
    migration = migrate(options(files, include="*.test|*.temp"))
    with pytest.raises(ConfigError) as err:
        kafka_mirror_maker.checked(migration, "generated.properties")
    assert err.value.key == "--whitelist" and err.value.file is None


def _run_cli(capsys: pytest.CaptureFixture[str], files: tuple[Path, Path], *extra: str) -> str:
    argv = ["--consumer.config", str(files[0]), "--producer.config", str(files[1])]
    with pytest.raises(SystemExit) as done:
        kafka_mirror_maker.main([*argv, "--whitelist", ".*", *extra])
    assert done.value.code == 2
    return capsys.readouterr().err.strip().splitlines()[-1]


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (["--message.handler", "com.example.Handler"], "--message.handler: refused: it runs"),
        (["--message.handler.args", "x"], "--message.handler.args: refused"),
        (["--consumer.rebalance.listener", "com.example.L"], "no rebalance to listen to"),
        (["--abortOnSendFail"], "did you mean --abort.on.send.failure?"),
        (["--white-list=.*"], "did you mean --whitelist?"),
        (["--abort.on.send.failures", "true"], "did you mean --abort.on.send.failure?"),
        (["--num.streams", "0"], "0 is less than 1"),
        (["new.consumer"], "unexpected argument 'new.consumer'"),
    ],
)
def test_options_it_cannot_honour_are_refused(
    capsys: pytest.CaptureFixture[str], files: tuple[Path, Path], extra: list[str], expected: str
) -> None:
    assert expected in _run_cli(capsys, files, *extra)


def test_bad_abort_value_and_missing_whitelist_exit_2(
    capsys: pytest.CaptureFixture[str], files: tuple[Path, Path]
) -> None:
    argv = ["--consumer.config", str(files[0]), "--producer.config", str(files[1])]
    assert kafka_mirror_maker.main([*argv, "--include", "x", "--abort.on.send.fail", "yes"]) == 2
    assert "'yes' is not true or false" in capsys.readouterr().err
    assert kafka_mirror_maker.main(argv) == 2
    assert "--include (or --whitelist) is required" in capsys.readouterr().err


def test_migrate_mm1_prints_a_file_that_loads(
    capsys: pytest.CaptureFixture[str], files: tuple[Path, Path], tmp_path: Path
) -> None:
    code = tools.main(
        [
            "migrate-mm1",
            "--consumer.config",
            str(files[0]),
            "--producer.config",
            str(files[1]),
            "--whitelist",
            "orders, payments",
            "--num.streams",
            "3",
            "--abort.on.send.fail",
            "true",
            "--offset.commit.interval.ms",
            "5000",
            "--new.consumer",
        ]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert out.startswith("# mm2.properties equivalent to the MirrorMaker 1 command line")
    assert "--whitelist 'orders, payments' --num.streams 3" in out
    written = tmp_path / "mm2.properties"
    written.write_text(out, encoding="utf-8")
    [flow] = load_properties(parse_properties(out, str(written))).enabled_flows
    assert flow.connectors[SOURCE]["topics"] == "orders|payments"
    assert flow.connectors[SOURCE]["progress.group.commit.interval.ms"] == "5000"
    assert flow.settings.source.tasks_max == 3


def test_mm1_keys_in_mm2_properties_warn_with_what_to_write() -> None:
    config = load_properties(
        parse_properties(
            "clusters = a, b\na.bootstrap.servers = a:9092\nb.bootstrap.servers = b:9092\n"
            "a->b.enabled = true\ntopics.whitelist = orders.*\na->b.whitelist = x\n"
            "num.streams = 4\n",
            "mm2.properties",
        )
    )
    warnings = "\n".join(config.warnings)
    assert "mm2.properties:5: topics.whitelist is a MirrorMaker 1 setting" in warnings
    assert "write topics instead" in warnings
    assert "a->b.whitelist is a MirrorMaker 1 setting" in warnings
    assert "write a->b.topics instead" in warnings
    assert "write tasks.max instead" in warnings
    assert "did you mean" not in warnings


# Seeds 000 and 001: Kerberos through the JVM's JAAS file, given in KAFKA_OPTS.
SEED_JAAS = """\
KafkaClient {
    com.sun.security.auth.module.Krb5LoginModule required
    useKeyTab=true
    keyTab="/tmp/mirrormaker.keytab"
    storeKey=true
    useTicketCache=false
    serviceName="kafka"
    principal="mirrormaker/HOSTNAME@EXAMPLE.COM";
};
"""


def test_kafka_client_entry_of_the_jaas_file_logs_both_clusters_in(tmp_path: Path) -> None:
    consumer, producer = tmp_path / "c.properties", tmp_path / "p.properties"
    consumer.write_text(
        "bootstrap.servers=a:9092\ngroup.id=g\nsecurity.protocol=SASL_PLAINTEXT\n",
        encoding="utf-8",
    )
    producer.write_text("bootstrap.servers=b:9092\nsecurity.protocol=SASL_PLAINTEXT\n")
    jaas = tmp_path / "kafka_mirrormaker_jaas.conf"
    jaas.write_text(SEED_JAAS, encoding="utf-8")
    opts = f"-Xmx1g -Djava.security.auth.login.config={jaas}"
    assert kafka_mirror_maker.jaas_file(opts) == str(jaas)
    migration = migrate(
        MirrorMaker1Options(str(consumer), str(producer), include="my-topic", jaas_file=str(jaas))
    )
    [flow] = load_properties(parse_properties(migration.text())).enabled_flows
    for client in (flow.source_consumer_config(), flow.target_producer_config()):
        assert client["sasl.kerberos.keytab"] == "/tmp/mirrormaker.keytab"
        assert client["sasl.kerberos.principal"] == "mirrormaker/HOSTNAME@EXAMPLE.COM"
        assert client["sasl.kerberos.service.name"] == "kafka"
    # without the JAAS file: said, not guessed
    bare = migrate(MirrorMaker1Options(str(consumer), str(producer), include="my-topic"))
    assert any("SASL without sasl.jaas.config" in w for w in bare.warnings)
