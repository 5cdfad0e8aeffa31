"""Cluster-level admin calls (describe, readiness) over confluent-kafka's AdminClient."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import NamedTuple

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from mm2.errors import KafkaClientError
from mm2.kafka.failure import ClientWatch

__all__ = ["ClusterDescription", "describe_cluster", "wait_until_ready"]


class ClusterDescription(NamedTuple):
    """What a cluster says about itself."""

    cluster_id: str
    controller_id: int | None
    broker_ids: tuple[int, ...]


def _admin(watch: ClientWatch, timeout: float) -> AdminClient:
    defaults: dict[str, str | int | float | bool] = {
        "socket.connection.setup.timeout.ms": max(1000, int(timeout * 1000)),
        # Silence librdkafka's connection-refused chatter while a broker is still starting.
        "log_level": 0,
    }
    admin = AdminClient(watch.settings(defaults))
    watch.serve_with(admin.poll)
    return admin


def describe_cluster(config: Mapping[str, str], *, timeout: float = 10.0) -> ClusterDescription:
    """Ask the cluster at `config["bootstrap.servers"]` for its id, controller and brokers."""
    watch = ClientWatch(config)
    try:
        admin = _admin(watch, timeout)  # must outlive the future, or librdkafka cancels it
        result = admin.describe_cluster(request_timeout=timeout).result()
    except KafkaException as exc:
        raise watch.error("describing the cluster", exc) from exc
    controller = result.controller.id if result.controller is not None else None
    brokers = tuple(sorted(node.id for node in result.nodes))
    return ClusterDescription(str(result.cluster_id), controller, brokers)


def wait_until_ready(
    config: Mapping[str, str],
    *,
    timeout: float,
    keep_waiting: Callable[[], bool] = lambda: True,
    interval: float = 0.25,
) -> ClusterDescription | None:
    """Describe the cluster until it answers with a broker.

    Returns None as soon as `keep_waiting()` turns false (say, the broker process died);
    raises a retriable KafkaClientError when `timeout` passes first.
    """
    deadline = time.monotonic() + timeout
    last = "no answer yet"
    while keep_waiting():
        left = deadline - time.monotonic()
        if left <= 0:
            raise KafkaClientError(
                f"{config.get('bootstrap.servers')} not ready after {timeout:.0f}s: {last}",
                retriable=True,
            )
        try:
            description = describe_cluster(config, timeout=min(2.0, max(left, 0.5)))
        except KafkaClientError as exc:
            last = str(exc)
        else:
            if description.broker_ids:
                return description
            last = "the cluster has no broker yet"
        time.sleep(interval)
    return None
