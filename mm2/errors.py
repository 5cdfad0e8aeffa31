"""The one error tree of mm2; every layer raises these, only the API layer maps them to HTTP.

MM2Error                                  class attributes: kind, retriable, operator
├── ConfigError (also ValueError)         a broken mm2.properties or option (exit 2)  [operator]
├── ClusterError                          a local Kafka cluster could not be set up or started
│   └── JavaNotFoundError / JarResolutionError / BrokerStartError
├── KafkaClientError                      a call to a Kafka cluster failed (`retriable` per call)
│   ├── AuthenticationError               wrong credentials or TLS                   [operator]
│   ├── AuthorizationError                an ACL refused the request                 [operator]
│   ├── RecordTooLargeError               a record the target refuses as too large   [operator]
│   ├── RecordRefusedError                a record the target refuses for good       [operator]
│   ├── ProducerFencedError               a newer holder of a transactional id took over
│   ├── TopicNotFoundError                a topic mm2 reads does not exist (yet): retried by a
│   │                                     task, 404 over REST (also a NotFoundError)
│   └── AbortableTransactionError         a transaction that must be aborted and copied again
├── RecordFormatError (also ValueError)   bytes that are not an MM2 internal record
├── NotFoundError (also LookupError)      unknown flow, connector, task or plugin          -> 404
├── ConflictError                         exists already, wrong state, ambiguous name      -> 409
└── BadRequestError (also ValueError)     a request body or config that cannot mean anything -> 400

`operator` marks what only a person can fix: a task stays FAILED with it until restarted over
REST. Anything else a task raises (a retriable KafkaClientError, or an error nobody expected)
is retried by its runner with capped exponential backoff; mm2.kafka.failure decides which Kafka
errors are retriable and which are an operator's. `kind` names the class as data, so that an
error can cross a process boundary (a Spark task: mm2.copy.failure) and be raised again as
itself (`error_class`).
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = [
    "AbortableTransactionError",
    "AuthenticationError",
    "AuthorizationError",
    "BadRequestError",
    "BrokerStartError",
    "ClusterError",
    "ConfigError",
    "ConflictError",
    "JarResolutionError",
    "JavaNotFoundError",
    "KafkaClientError",
    "MM2Error",
    "NotFoundError",
    "ProducerFencedError",
    "RecordFormatError",
    "RecordRefusedError",
    "RecordTooLargeError",
    "RefusedByClusterError",
    "TopicNotFoundError",
    "error_class",
]


class MM2Error(Exception):
    """Base of every error mm2 raises on purpose."""

    kind: str = "error"
    retriable: bool = False
    operator: bool = False


class ConfigError(MM2Error, ValueError):
    """A configuration that cannot mean anything: names the file, line, key and what is accepted."""

    kind = "config"
    operator = True

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        key: str | None = None,
    ) -> None:
        self.file = file
        self.line = line
        self.key = key
        self.detail = message
        where = ""
        if file is not None:
            where = file if line is None else f"{file}:{line}"
            where += ": "
        keypart = f"{key}: " if key is not None else ""
        super().__init__(f"{where}{keypart}{message}")


class ClusterError(MM2Error):
    """A local Kafka cluster could not be prepared, started or stopped."""

    kind = "cluster"


class JavaNotFoundError(ClusterError):
    """No usable `java` (17+) on PATH or in JAVA_HOME."""

    kind = "java-not-found"


class JarResolutionError(ClusterError):
    """Maven could not resolve the Kafka jars from Maven Central."""

    kind = "jar-resolution"


class BrokerStartError(ClusterError):
    """A broker process exited or never answered during start."""

    kind = "broker-start"


class KafkaClientError(MM2Error):
    """A request to a Kafka cluster failed; `retriable` tells whether trying again may help,
    `code` is Kafka's name for the error (INVALID_REPLICATION_FACTOR, ...) when it gave one."""

    kind = "kafka"

    def __init__(
        self, message: str, *, retriable: bool | None = None, code: str | None = None
    ) -> None:
        super().__init__(message)
        if retriable is not None:
            self.retriable = retriable
        self.code = code


class RefusedByClusterError(KafkaClientError):
    """A cluster refused something that only a person can change (credentials, ACLs, a topic's
    limits): trying again cannot help, and the task says it (FAILED) rather than retry."""

    operator = True

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message, retriable=False, code=code)


class AuthenticationError(RefusedByClusterError):
    """A cluster refused our credentials (SASL) or the TLS handshake failed; names the cluster's
    alias and bootstrap servers."""

    kind = "authentication"


class AuthorizationError(RefusedByClusterError):
    """A cluster's ACLs refuse a request mm2 needs; names the cluster and the request."""

    kind = "authorization"


class RecordTooLargeError(RefusedByClusterError):
    """A source record is larger than the target topic accepts; names topic, partition, offset."""

    kind = "record-too-large"


class RecordRefusedError(RefusedByClusterError):
    """The target refuses a record for a reason that trying again cannot change (a timestamp
    outside the remote topic's limits, a policy, a null key on a compacted topic); names the
    topic-partition, the offset and the broker's reason."""

    kind = "record-refused"


class ProducerFencedError(KafkaClientError):
    """Another holder of the transactional id took over: this copy task must end (a zombie)."""

    kind = "fenced"


class AbortableTransactionError(KafkaClientError):
    """The transaction cannot commit (a record failed delivery in an outage): abort it and
    copy its records again."""

    kind = "abortable"
    retriable = True


class RecordFormatError(MM2Error, ValueError):
    """Bytes that do not decode as an MM2 internal record (offset sync, checkpoint, heartbeat)."""

    kind = "record-format"


class NotFoundError(MM2Error, LookupError):
    """No flow, connector, task or plugin of that name."""

    kind = "not-found"


class ConflictError(MM2Error):
    """The request does not fit the current state (exists, not stopped, ambiguous name)."""

    kind = "conflict"


class TopicNotFoundError(KafkaClientError, NotFoundError):
    """A topic mm2 reads is not on the cluster (an offsets topic of a flow that never copied
    there): a task waits for it (retriable); over REST it is a 404 naming the topic."""

    kind = "topic-not-found"
    retriable = True

    def __init__(self, message: str) -> None:
        super().__init__(message, retriable=True)


class BadRequestError(MM2Error, ValueError):
    """Invalid input; `errors` maps each offending key to what is wrong with it."""

    kind = "bad-request"

    def __init__(self, message: str, errors: Mapping[str, list[str]] | None = None) -> None:
        super().__init__(message)
        self.errors: dict[str, list[str]] = {k: list(v) for k, v in (errors or {}).items()}


def error_class(kind: str) -> type[MM2Error]:
    """The class of the tree whose `kind` is `kind` (MM2Error for a kind nobody knows)."""
    pending: list[type[MM2Error]] = [MM2Error]
    while pending:
        cls = pending.pop()
        if cls.kind == kind:
            return cls
        pending.extend(cls.__subclasses__())
    return MM2Error
