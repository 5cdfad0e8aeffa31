"""The one error tree of mm2; every layer raises these, only the API layer maps them to HTTP.

MM2Error
├── OperatorError                     only a person can fix it: a task stays FAILED with it
│   ├── ConfigError (also ValueError) a broken mm2.properties or option; exit code 2
│   ├── AuthenticationError           (also a KafkaClientError) wrong credentials or TLS
│   ├── AuthorizationError            (also a KafkaClientError) an ACL refused the request
│   └── RecordTooLargeError           (also a KafkaClientError) a record the target refuses
├── ClusterError                      a local Kafka cluster could not be set up or started
│   └── JavaNotFoundError / JarResolutionError / BrokerStartError
├── KafkaClientError                  a call to a Kafka cluster failed (has `retriable`)
│   └── AuthenticationError / AuthorizationError / RecordTooLargeError  (never retriable)
└── RecordFormatError (also ValueError)  bytes that are not an MM2 internal record

Anything else a task raises (a retriable KafkaClientError, or an error nobody expected) is
retried by its runner with capped exponential backoff; mm2.kafka.failure decides which Kafka
errors are retriable and which are an operator's.
"""

from __future__ import annotations

__all__ = [
    "AuthenticationError",
    "AuthorizationError",
    "BrokerStartError",
    "ClusterError",
    "ConfigError",
    "JarResolutionError",
    "JavaNotFoundError",
    "KafkaClientError",
    "MM2Error",
    "OperatorError",
    "RecordFormatError",
    "RecordTooLargeError",
]


class MM2Error(Exception):
    """Base of every error mm2 raises on purpose."""

    retriable: bool = False


class OperatorError(MM2Error):
    """An error only a person can fix (credentials, ACLs, configuration, an oversized record):
    retrying cannot help, so the task stays FAILED with it until restarted over REST."""


class ConfigError(OperatorError, ValueError):
    """A configuration that cannot mean anything: names the file, line, key and what is accepted."""

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


class JavaNotFoundError(ClusterError):
    """No usable `java` (17+) on PATH or in JAVA_HOME."""


class JarResolutionError(ClusterError):
    """Maven could not resolve the Kafka jars from Maven Central."""


class BrokerStartError(ClusterError):
    """A broker process exited or never answered during start."""


class KafkaClientError(MM2Error):
    """A request to a Kafka cluster failed; `retriable` tells whether trying again may help."""

    def __init__(self, message: str, *, retriable: bool = False) -> None:
        super().__init__(message)
        self.retriable = retriable


class RecordFormatError(MM2Error, ValueError):
    """Bytes that do not decode as an MM2 internal record (offset sync, checkpoint, heartbeat)."""


class RecordTooLargeError(KafkaClientError, OperatorError):
    """A source record is larger than the target topic accepts; names topic, partition, offset."""

    def __init__(self, message: str) -> None:
        super().__init__(message, retriable=False)


class AuthenticationError(KafkaClientError, OperatorError):
    """A cluster refused our credentials (SASL) or the TLS handshake failed; names the cluster's
    alias and bootstrap servers."""

    def __init__(self, message: str) -> None:
        super().__init__(message, retriable=False)


class AuthorizationError(KafkaClientError, OperatorError):
    """A cluster's ACLs refuse a request mm2 needs; names the cluster and the request."""

    def __init__(self, message: str) -> None:
        super().__init__(message, retriable=False)
