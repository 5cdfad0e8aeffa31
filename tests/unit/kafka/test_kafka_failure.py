"""mm2.kafka.failure: which Kafka errors an outage causes, which a person must fix."""

from __future__ import annotations

import concurrent.futures

import pytest
from confluent_kafka import KafkaError, KafkaException

from mm2.config.librdkafka import ClientConfig
from mm2.errors import (
    AuthenticationError,
    AuthorizationError,
    KafkaClientError,
    RecordTooLargeError,
)
from mm2.kafka.failure import (
    ClientWatch,
    classify,
    client_error,
    cluster_label,
    transaction_outcome,
)


def raised(code: int, text: str | None = None) -> KafkaException:
    return KafkaException(KafkaError(code, text) if text else KafkaError(code))


@pytest.mark.parametrize(
    "code",
    [
        KafkaError._TRANSPORT,
        KafkaError._TIMED_OUT,
        KafkaError._ALL_BROKERS_DOWN,
        KafkaError._MSG_TIMED_OUT,
        KafkaError._RESOLVE,
        KafkaError.REQUEST_TIMED_OUT,
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.FENCED_LEADER_EPOCH,
        KafkaError.UNKNOWN_LEADER_EPOCH,
        KafkaError.NOT_CONTROLLER,
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
        KafkaError.NOT_COORDINATOR,
        KafkaError.NETWORK_EXCEPTION,
        KafkaError.BROKER_NOT_AVAILABLE,
        KafkaError.NOT_ENOUGH_REPLICAS,
        KafkaError._UNKNOWN_PARTITION,
    ],
)
def test_what_an_outage_answers_is_retriable(code: int) -> None:
    failure = classify(raised(code))
    assert (failure.kind, failure.retriable) == ("outage", True)
    error = client_error("listing topics", raised(code), cluster="backup (b:9092)")
    assert type(error) is KafkaClientError and error.retriable
    assert str(error).startswith("listing topics on backup (b:9092): ")
    assert KafkaError(code).name() in str(error)


def test_timeouts_and_full_queues_are_outages() -> None:
    assert classify(concurrent.futures.TimeoutError()).retriable
    assert classify(TimeoutError()).retriable
    assert classify(BufferError("queue full")).retriable
    assert classify(RuntimeError("boom")).kind == "other"


@pytest.mark.parametrize(
    ("error", "kind", "cls"),
    [
        (raised(KafkaError._AUTHENTICATION), "authentication", AuthenticationError),
        (raised(KafkaError.SASL_AUTHENTICATION_FAILED), "authentication", AuthenticationError),
        (raised(KafkaError._SSL), "authentication", AuthenticationError),
        (
            raised(KafkaError._TRANSPORT, "ssl://b:9093/bootstrap: SSL handshake failed: x"),
            "authentication",
            AuthenticationError,
        ),
        (raised(KafkaError.TOPIC_AUTHORIZATION_FAILED), "authorization", AuthorizationError),
        (raised(KafkaError.GROUP_AUTHORIZATION_FAILED), "authorization", AuthorizationError),
        (raised(KafkaError.CLUSTER_AUTHORIZATION_FAILED), "authorization", AuthorizationError),
        (raised(KafkaError.MSG_SIZE_TOO_LARGE), "record-too-large", RecordTooLargeError),
    ],
)
def test_what_a_person_must_fix_is_an_operator_error(
    error: KafkaException, kind: str, cls: type[KafkaClientError]
) -> None:
    assert classify(error).kind == kind
    assert not classify(error).retriable
    made = client_error("creating topics", error, cluster="backup (b:9092)")
    assert type(made) is cls and made.operator and not made.retriable
    assert "backup (b:9092)" in str(made)


def test_authentication_failure_names_the_cluster_first() -> None:
    made = client_error("listing topics", raised(KafkaError._AUTHENTICATION), cluster="p (a:1)")
    assert str(made).startswith("authentication failed for p (a:1) while listing topics: ")


def test_other_errors_are_neither_retriable_nor_an_operators() -> None:
    failure = classify(raised(KafkaError.INVALID_REPLICATION_FACTOR))
    assert (failure.kind, failure.retriable) == ("other", False)
    # The error carries Kafka's name for it: callers test the code, never the message.
    made = client_error("creating t", raised(KafkaError.INVALID_REPLICATION_FACTOR))
    assert made.code == "INVALID_REPLICATION_FACTOR"
    assert client_error("x", TimeoutError()).code is None
    fatal = KafkaException(KafkaError(KafkaError._TRANSPORT, "x", fatal=True))
    assert classify(fatal).kind == "other"


def test_cluster_label_uses_the_alias_a_client_config_carries() -> None:
    config = ClientConfig({"bootstrap.servers": "localhost:9092"}, alias="primary")
    assert cluster_label(config) == "primary (localhost:9092)"
    assert cluster_label({"bootstrap.servers": "localhost:9092"}) == "localhost:9092"
    assert cluster_label({}, "backup") == "backup (no bootstrap.servers)"
    assert config == {"bootstrap.servers": "localhost:9092"}  # still a plain mapping


def test_watch_turns_a_timeout_into_the_authentication_failure_it_saw() -> None:
    config = ClientConfig({"bootstrap.servers": "localhost:9092"}, alias="primary")
    watch = ClientWatch(config)
    assert callable(watch.settings()["error_cb"])
    timeout = raised(KafkaError._TRANSPORT)
    assert type(watch.error("listing topics", timeout)) is KafkaClientError
    watch._on_error(KafkaError(KafkaError._AUTHENTICATION, "SASL authentication error: bad"))
    watch._on_error(KafkaError(KafkaError._ALL_BROKERS_DOWN))  # says less: ignored
    error = watch.error("listing topics", timeout)
    assert isinstance(error, AuthenticationError)
    assert str(error) == (
        "authentication failed for primary (localhost:9092) while listing topics: "
        "SASL authentication error: bad"
    )
    # A later connection failure that is not about credentials: an outage again.
    watch._on_error(KafkaError(KafkaError._TRANSPORT, "Connection refused"))
    assert watch.error("listing topics", timeout).retriable


def test_watch_forgets_old_authentication_failures() -> None:
    watch = ClientWatch({"bootstrap.servers": "b:1"}, window_s=0.0)
    watch._on_error(KafkaError(KafkaError._AUTHENTICATION, "bad"))
    assert watch.error("listing topics", raised(KafkaError._TIMED_OUT)).retriable


@pytest.mark.parametrize(
    ("error", "outcome"),
    [
        (KafkaError(KafkaError._FENCED, fatal=True), "fenced"),
        (KafkaError(KafkaError.PRODUCER_FENCED), "fenced"),
        (KafkaError(KafkaError._STATE, txn_requires_abort=True), "abortable"),
        (KafkaError(KafkaError._TIMED_OUT, retriable=True), "retriable"),
        (KafkaError(KafkaError.INVALID_TXN_STATE, fatal=True), "fatal"),
    ],
)
def test_a_transactional_calls_failure_says_what_the_copy_task_does(
    error: KafkaError, outcome: str
) -> None:
    assert transaction_outcome(error) == outcome
