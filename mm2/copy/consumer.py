"""The source side of a copy task: its consumer, assigned to its partitions, never committing."""

from __future__ import annotations

from collections.abc import Mapping

from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, Consumer

from mm2.copy.spec import CopyTaskSpec
from mm2.copy.stuck import STATS_INTERVAL_MS, FetchStates
from mm2.kafka.failure import AuthAlarm, ClientLog

__all__ = ["RESET", "fetch_pause_ms", "replication_client_id", "source_consumer"]

# While records flow, a fetch the source broker answers at once carries a few records each, and
# every one costs both librdkafka threads and the broker a wakeup. Measured on one source
# partition pair at 1,250 records/s (2-vCPU host): 930 fetches a second and 10 % of a core for
# the consumer alone; held up to 5 ms for a megabyte, 180 fetches and under 4 %. A backlog
# fills the megabyte at once, so bulk copying does not wait; a record waits at most the 5 ms.
# Either key set by the operator replaces both (librdkafka's defaults for the other).
_FETCH_WAIT_MS = 5
_FETCH_MIN_BYTES = 1_000_000
_FETCH_KEYS = ("fetch.wait.max.ms", "fetch.min.bytes")

# Where a partition without a position starts, by auto.offset.reset: given to the consumer
# directly, it asks the source for no committed offsets (the copier's group never commits).
RESET = {
    "earliest": OFFSET_BEGINNING,
    "smallest": OFFSET_BEGINNING,
    "beginning": OFFSET_BEGINNING,
    "latest": OFFSET_END,
    "largest": OFFSET_END,
    "end": OFFSET_END,
}


def replication_client_id(flow: str, task: int) -> str:
    """The client.id of a copy task's consumer, as Apache MM2 names its source task's
    (`source->target|MirrorSourceConnector-<task>|replication-consumer`): the same clientid on
    the broker's side and in the consumer metrics that dashboards chart."""
    return f"{flow}|MirrorSourceConnector-{task}|replication-consumer"


def _fetch_defaults(settings: Mapping[str, object]) -> dict[str, int]:
    if any(key in settings for key in _FETCH_KEYS):
        return {}
    return {"fetch.wait.max.ms": _FETCH_WAIT_MS, "fetch.min.bytes": _FETCH_MIN_BYTES}


def fetch_pause_ms(settings: Mapping[str, object]) -> int:
    """How long the source broker may hold a fetch while records flow: a gap this long between
    records says nothing about whether more are coming (0 when fetches are answered at once)."""
    merged = {**_fetch_defaults(settings), **settings}
    if int(str(merged.get("fetch.min.bytes", 1))) <= 1:
        return 0
    return int(str(merged.get("fetch.wait.max.ms", 500)))


def source_consumer(spec: CopyTaskSpec, alarm: AuthAlarm, states: FetchStates) -> Consumer:
    """A copy task's consumer on the source: assigned, never committing; its statistics tell
    `states` each partition's fetch state (mm2.copy.stuck). A client.id the operator set comes
    first, as Apache MM2 prefixes it."""
    settings = spec.settings.source_consumer
    client_id = replication_client_id(spec.settings.flow, spec.task)
    if settings.get("client.id"):
        client_id = f"{settings['client.id']}|{client_id}"
    return Consumer(
        {
            "group.id": f"mm2-copier-{spec.settings.flow}",
            "statistics.interval.ms": STATS_INTERVAL_MS,
            **_fetch_defaults(settings),
            **settings,
            "client.id": client_id,
            "stats_cb": states,
            # An offset the source no longer has is judged by the copy loop (_out_of_range),
            # never reset silently: the partitions without a position get an explicit start.
            "auto.offset.reset": "error",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "enable.partition.eof": False,
            "error_cb": alarm,
            "logger": ClientLog(alarm.cluster),
        }
    )
