"""What a Kafka client's error means for mm2: an outage to retry, a person's to fix, or neither.

The one place that maps confluent-kafka errors to mm2's error tree. librdkafka marks few
errors retriable (not a transport failure, a timeout or a fenced leader epoch in an admin
result), so the codes an outage produces are named here. Authentication failures never reach
a call's result: librdkafka reports them to the client's `error_cb` and the call times out, so
a ClientWatch remembers them and turns the timeout into an AuthenticationError that names the
cluster.

>>> classify(KafkaError(KafkaError._TRANSPORT)).kind
'outage'
>>> classify(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED)).kind
'authorization'
"""

from __future__ import annotations

import concurrent.futures
import logging
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

from confluent_kafka import KafkaError, KafkaException

from mm2.errors import (
    AuthenticationError,
    AuthorizationError,
    KafkaClientError,
    RecordRefusedError,
    RecordTooLargeError,
)
from mm2.log.collapse import CAUSE_ATTRIBUTE, blank_numbers

__all__ = [
    "LIBRDKAFKA_LOG",
    "AuthAlarm",
    "ClientLog",
    "ClientWatch",
    "Failure",
    "FailureKind",
    "classify",
    "client_error",
    "cluster_label",
    "ends_a_consumer",
    "error_code",
    "transaction_outcome",
]

log = logging.getLogger(__name__)
# librdkafka's own log lines go through Python logging (not straight to stderr), so that they
# are formatted, filtered and redacted (mm2.config.providers) like every other line.
LIBRDKAFKA_LOG = logging.getLogger("mm2.kafka.librdkafka")

Setting = str | int | float | bool
FailureKind = Literal[
    "outage", "authentication", "authorization", "record-too-large", "refused", "other"
]


def _codes(*names: str) -> frozenset[int]:
    # getattr: a code this librdkafka build does not know is simply not in the set.
    return frozenset(int(getattr(KafkaError, n)) for n in names if hasattr(KafkaError, n))


# What a broker restart, a network partition, a leader election or a slow cluster answers.
_OUTAGE = _codes(
    "_TRANSPORT",
    "_TIMED_OUT",
    "_TIMED_OUT_QUEUE",
    "_MSG_TIMED_OUT",
    "_ALL_BROKERS_DOWN",
    "_RESOLVE",
    "_WAIT_COORD",
    "_WAIT_CACHE",
    "_UNKNOWN_BROKER",
    "_NODE_UPDATE",
    "_IN_PROGRESS",
    "_PREV_IN_PROGRESS",
    "_QUEUE_FULL",
    "_INTR",
    "_DESTROY",
    # "No leaders found" while a restarted broker has not taken its partitions back yet.
    "_NOENT",
    # A topic created a moment ago that this client's metadata does not show yet.
    "_UNKNOWN_PARTITION",
    "_UNKNOWN_TOPIC",
    "REQUEST_TIMED_OUT",
    "NETWORK_EXCEPTION",
    "BROKER_NOT_AVAILABLE",
    "REPLICA_NOT_AVAILABLE",
    "NOT_LEADER_FOR_PARTITION",
    "LEADER_NOT_AVAILABLE",
    "PREFERRED_LEADER_NOT_AVAILABLE",
    "ELECTION_NOT_AVAILABLE",
    "FENCED_LEADER_EPOCH",
    "UNKNOWN_LEADER_EPOCH",
    "NOT_CONTROLLER",
    "LISTENER_NOT_FOUND",
    "COORDINATOR_LOAD_IN_PROGRESS",
    "COORDINATOR_NOT_AVAILABLE",
    "NOT_COORDINATOR",
    "REBALANCE_IN_PROGRESS",
    "UNKNOWN_TOPIC_OR_PART",
    "UNKNOWN_TOPIC_ID",
    "NOT_ENOUGH_REPLICAS",
    "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
    "KAFKA_STORAGE_ERROR",
    "OFFSET_NOT_AVAILABLE",
    "UNSTABLE_OFFSET_COMMIT",
    "THROTTLING_QUOTA_EXCEEDED",
    "FETCH_SESSION_ID_NOT_FOUND",
    "INVALID_FETCH_SESSION_EPOCH",
    "CONCURRENT_TRANSACTIONS",
)
_AUTHENTICATION = _codes(
    "_AUTHENTICATION",
    "_SSL",
    "SASL_AUTHENTICATION_FAILED",
    "UNSUPPORTED_SASL_MECHANISM",
    "ILLEGAL_SASL_STATE",
)
_AUTHORIZATION = _codes(
    "TOPIC_AUTHORIZATION_FAILED",
    "GROUP_AUTHORIZATION_FAILED",
    "CLUSTER_AUTHORIZATION_FAILED",
    "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
    "DELEGATION_TOKEN_AUTHORIZATION_FAILED",
)
_TOO_LARGE = _codes("MSG_SIZE_TOO_LARGE", "RECORD_LIST_TOO_LARGE")
# A record the broker refuses for what it is, whatever the moment: a timestamp outside the topic's
# message.timestamp.*.max.ms, a null key on a compacted topic, a policy, an old record format.
_REFUSED = _codes(
    "INVALID_TIMESTAMP",
    "INVALID_RECORD",
    "POLICY_VIOLATION",
    "UNSUPPORTED_FOR_MESSAGE_FORMAT",
    "UNSUPPORTED_COMPRESSION_TYPE",
    "INVALID_REQUIRED_ACKS",
)
# librdkafka reports a TLS handshake that fails (wrong port, untrusted certificate) as a
# transport failure with this text; it is a setting to fix, not an outage.
_TLS_FAILURE = "SSL handshake failed"


@dataclass(frozen=True)
class Failure:
    """What an error means: its kind, whether trying again may help, and a line for operators."""

    kind: FailureKind
    retriable: bool
    detail: str
    code: str | None = None  # Kafka's name for the error, when it gave one


def _kafka_error(exc: BaseException | KafkaError) -> KafkaError | None:
    if isinstance(exc, KafkaError):
        return exc
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        return exc.args[0]
    return None


def error_code(exc: BaseException | KafkaError) -> int | None:
    """Kafka's error code that an exception carries (None when it carries none)."""
    error = _kafka_error(exc)
    return None if error is None else int(error.code())


def classify(exc: BaseException | KafkaError) -> Failure:
    """The meaning of a confluent-kafka error (a KafkaError, or an exception carrying one)."""
    error = _kafka_error(exc)
    if error is None:
        if isinstance(exc, concurrent.futures.TimeoutError | TimeoutError):
            return Failure("outage", True, "timed out")
        if isinstance(exc, BufferError):
            return Failure("outage", True, f"client queue full: {exc}")
        return Failure("other", False, str(exc) or type(exc).__name__)
    code = int(error.code())
    text, name = error.str(), error.name()
    detail = f"{text} ({name})"
    if code in _AUTHENTICATION or (code == KafkaError._TRANSPORT and _TLS_FAILURE in text):
        return Failure("authentication", False, detail, name)
    if code in _AUTHORIZATION:
        return Failure("authorization", False, detail, name)
    if code in _TOO_LARGE:
        return Failure("record-too-large", False, detail, name)
    if code in _REFUSED:
        return Failure("refused", False, detail, name)
    if error.fatal():
        # A fatal producer error (fenced, sequence lost): only a new client helps, which is
        # what the task's runner does when it restarts the task.
        return Failure("other", False, detail, name)
    if code in _OUTAGE or error.retriable():
        return Failure("outage", True, detail, name)
    return Failure("other", False, detail, name)


def ends_a_consumer(error: KafkaError) -> bool:
    """Whether an error a consumer returns in place of a record is a person's to fix, or
    fatal; anything else librdkafka retries by itself."""
    return classify(error).kind in ("authentication", "authorization") or bool(error.fatal())


TransactionOutcome = Literal["fenced", "abortable", "retriable", "fatal"]


def transaction_outcome(error: KafkaError) -> TransactionOutcome:
    """What a failed transactional call means for the producer that made it: fenced (a newer
    holder of its transactional id took over: end), abortable (abort the transaction, then go
    on), retriable (the same call may work later), or fatal (only a new producer helps)."""
    if error.code() in (KafkaError._FENCED, KafkaError.PRODUCER_FENCED) or (
        error.fatal() and "fenc" in error.str().lower()
    ):
        return "fenced"
    if error.txn_requires_abort():
        return "abortable"
    if error.retriable():
        return "retriable"
    return "fatal"


def cluster_label(config: Mapping[str, object], alias: str | None = None) -> str:
    """`alias (bootstrap servers)`, or the bootstrap servers alone when the alias is unknown.

    The alias is `alias`, else the `alias` attribute of a ClientConfig from mm2.config.
    """
    servers = str(config.get("bootstrap.servers") or "no bootstrap.servers")
    name = alias or getattr(config, "alias", None)
    return f"{name} ({servers})" if name else servers


def client_error(
    what: str, exc: BaseException | KafkaError, *, cluster: str | None = None
) -> KafkaClientError:
    """The mm2 error for `exc` raised while doing `what` (say "listing topics") on `cluster`."""
    failure = classify(exc)
    where = f" on {cluster}" if cluster else ""
    if failure.kind == "authentication":
        return AuthenticationError(
            f"authentication failed for {cluster or 'the cluster'} while {what}: {failure.detail}",
            code=failure.code,
        )
    if failure.kind == "authorization":
        return AuthorizationError(
            f"{what}{where}: not authorized: {failure.detail}", code=failure.code
        )
    if failure.kind == "record-too-large":
        return RecordTooLargeError(f"{what}{where}: {failure.detail}", code=failure.code)
    if failure.kind == "refused":
        return RecordRefusedError(f"{what}{where}: refused: {failure.detail}", code=failure.code)
    return KafkaClientError(
        f"{what}{where}: {failure.detail}", retriable=failure.retriable, code=failure.code
    )


# librdkafka's "[thrd:...]: " prefix: the internal thread's name, noise to an operator.
_THREAD_PREFIX = re.compile(r"^\[thrd:[^\]]*\]:\s*")
# A transactional producer that a newer holder of its id fenced: a copy task of an ended epoch
# (every new epoch fences the last one's), not a failure; librdkafka says CRITICAL.
_FENCED = re.compile(r"fenced by a newer instance|attempted an operation with an old epoch")


class ClientLog:
    """librdkafka's log lines of one client (its `logger` setting), through LIBRDKAFKA_LOG,
    each naming the cluster: `primary (kafka-1:9092): kafka-1:9092/1: Connect to ... failed:
    Connection refused (after 0ms in state CONNECT) [FAIL, client rdkafka#producer-1]`.

    Every client of a cluster reports the same broker's failure: the cause (for
    mm2.log's RepeatFilter) leaves the client's name and the varying numbers out, so one line
    per cause and interval is written whichever client saw it.
    """

    def __init__(self, cluster: str, logger: logging.Logger = LIBRDKAFKA_LOG) -> None:
        self.cluster = cluster
        self._logger = logger

    def log(self, level: int, fmt: str, *args: object) -> None:
        # confluent-kafka calls log(level, "%s [%s] %s", facility, client name, text).
        if len(args) == 3:
            facility, client, text = (str(a) for a in args)
            text = _THREAD_PREFIX.sub("", text)
            cause = f"{self.cluster}: {facility}: {blank_numbers(text)}"
            if _FENCED.search(text):
                level = min(level, logging.INFO)
            self._logger.log(
                level,
                "%s: %s [%s, client %s]",
                self.cluster,
                text,
                facility,
                client,
                extra={CAUSE_ATTRIBUTE: cause},
            )
        else:
            self._logger.log(level, "%s: " + fmt, self.cluster, *args)


class AuthAlarm:
    """An `error_cb` that remembers an authentication failure: librdkafka reports those only
    there, and a client that streams (a copy task's consumer and producer) checks it each round.

    >>> alarm = AuthAlarm("primary (b:9092)")
    >>> alarm(KafkaError(KafkaError._TRANSPORT)); alarm.check()
    """

    def __init__(self, cluster: str) -> None:
        self.cluster = cluster
        self.failure: str | None = None

    def __call__(self, err: KafkaError) -> None:
        if err.code() in (KafkaError._AUTHENTICATION, KafkaError.SASL_AUTHENTICATION_FAILED):
            self.failure = err.str()

    def check(self) -> None:
        if self.failure is not None:
            raise AuthenticationError(f"authentication failed for {self.cluster}: {self.failure}")


class ClientWatch:
    """The `error_cb` of one client: remembers the last connection-level error, so that a call
    that timed out because the cluster refused our credentials says so.

    >>> watch = ClientWatch({"bootstrap.servers": "b:9092"}, alias="primary")
    >>> settings = watch.settings()  # pass to Producer/Consumer/AdminClient
    >>> watch.error("listing topics", KafkaException(KafkaError(KafkaError._TRANSPORT))).retriable
    True
    """

    def __init__(
        self,
        config: Mapping[str, Setting],
        *,
        alias: str | None = None,
        window_s: float = 120.0,
    ) -> None:
        self._config = dict(config)
        self.cluster = cluster_label(config, alias)
        self._window = window_s
        self._lock = threading.Lock()
        self._last: tuple[float, KafkaError] | None = None
        self._serve: Callable[[float], object] | None = None

    def settings(self, defaults: Mapping[str, Setting] | None = None) -> dict[str, Setting]:
        """librdkafka settings: `defaults`, overridden by the client's config, plus error_cb."""
        settings: dict[str, Setting] = {**(defaults or {}), **self._config}
        # confluent-kafka's stubs type settings as scalars only, callbacks included.
        settings["error_cb"] = self._on_error  # type: ignore[assignment]
        settings.setdefault("logger", ClientLog(self.cluster))  # type: ignore[arg-type]
        return settings

    def serve_with(self, poll: Callable[[float], object]) -> None:
        """How to serve the client's callbacks before judging a failure (AdminClient.poll;
        not a consumer's poll, which would take its messages)."""
        self._serve = poll

    def _on_error(self, error: KafkaError) -> None:
        if error.code() == KafkaError._ALL_BROKERS_DOWN:
            return  # follows every broker's own error, which says more
        with self._lock:
            self._last = (time.monotonic(), error)
        log.debug("%s: %s", self.cluster, error.str())

    def authentication_failure(self) -> KafkaError | None:
        """The last connection error, if it was an authentication or TLS failure lately."""
        if self._serve is not None:
            try:
                self._serve(0)
            except Exception:
                log.debug("%s: serving client callbacks failed", self.cluster, exc_info=True)
        with self._lock:
            last = self._last
        if last is None or time.monotonic() - last[0] > self._window:
            return None
        return last[1] if classify(last[1]).kind == "authentication" else None

    def error(self, what: str, exc: BaseException | KafkaError) -> KafkaClientError:
        """The mm2 error for a failed call: an AuthenticationError naming the cluster when the
        call failed as an outage while the cluster was refusing our credentials."""
        failure = classify(exc)
        if failure.retriable:
            auth = self.authentication_failure()
            if auth is not None:
                return AuthenticationError(
                    f"authentication failed for {self.cluster} while {what}: {auth.str()}"
                )
        return client_error(what, exc, cluster=self.cluster)
