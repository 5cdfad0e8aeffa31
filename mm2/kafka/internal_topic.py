"""Create MM2's compacted internal topics (heartbeats, checkpoints, offset syncs) as Apache does."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from mm2.errors import KafkaClientError

__all__ = ["create_compacted_topic"]

log = logging.getLogger(__name__)

# Apache's MirrorUtils.createCompactedTopic treats these as "nothing to do".
_TOLERATED = {
    KafkaError.TOPIC_ALREADY_EXISTS,
    KafkaError.UNSUPPORTED_VERSION,
    KafkaError.TOPIC_AUTHORIZATION_FAILED,
    KafkaError.CLUSTER_AUTHORIZATION_FAILED,
}


def create_compacted_topic(
    admin_config: Mapping[str, str],
    name: str,
    *,
    replication_factor: int,
    partitions: int = 1,
    timeout: float = 30.0,
) -> bool:
    """Create `name` with cleanup.policy=compact; True if created, False if it was there."""
    admin = AdminClient(dict(admin_config))
    topic = NewTopic(
        name,
        num_partitions=partitions,
        replication_factor=replication_factor,
        config={"cleanup.policy": "compact"},
    )
    try:
        admin.create_topics([topic], request_timeout=timeout)[name].result(timeout)
    except KafkaException as exc:
        error = exc.args[0] if exc.args else None
        if isinstance(error, KafkaError) and error.code() in _TOLERATED:
            return False
        retriable = isinstance(error, KafkaError) and error.retriable()
        raise KafkaClientError(
            f"creating internal topic {name} (replication factor {replication_factor}) "
            f"failed: {exc}; on a cluster with fewer brokers than that, set the matching "
            "*.topic.replication.factor",
            retriable=retriable,
        ) from exc
    log.info("created internal topic %s", name)
    return True
