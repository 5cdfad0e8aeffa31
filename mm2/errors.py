"""The one error tree of mm2; every layer raises these, only the API layer maps them to HTTP.

MM2Error
├── ConfigError (also ValueError)     a broken mm2.properties or option; exit code 2
├── ClusterError                      a local Kafka cluster could not be set up or started
│   └── JavaNotFoundError / JarResolutionError / BrokerStartError
├── KafkaClientError                  a call to a Kafka cluster failed (has `retriable`)
│   └── RecordTooLargeError           a record bigger than the target accepts
└── RecordFormatError (also ValueError)  bytes that are not an MM2 internal record
"""

from __future__ import annotations

__all__ = [
    "BrokerStartError",
    "ClusterError",
    "ConfigError",
    "JarResolutionError",
    "JavaNotFoundError",
    "KafkaClientError",
    "MM2Error",
    "RecordFormatError",
    "RecordTooLargeError",
]


class MM2Error(Exception):
    """Base of every error mm2 raises on purpose."""

    retriable: bool = False


class ConfigError(MM2Error, ValueError):
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


class RecordTooLargeError(KafkaClientError):
    """A source record is larger than the target topic accepts; names topic, partition, offset."""

    def __init__(self, message: str) -> None:
        super().__init__(message, retriable=False)
