"""Reading a flow's offset-syncs topic into translators, and naming clusters in errors."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from mm2.config import Flow
from mm2.config.model import SOURCE
from mm2.errors import KafkaClientError, RecordFormatError
from mm2.kafka.log_reader import LogReader, LogRecord
from mm2.kafka.topics import TopicAdmin
from mm2.offset_syncs.exact_index import PREV_SYNC_HEADER, PrevSync, decode_prev_sync
from mm2.offset_syncs.reverse import ReverseTranslator
from mm2.offset_syncs.translator import OffsetTranslator
from mm2.records import OffsetSync

__all__ = [
    "SyncsLocation",
    "Unreachable",
    "decode_syncs",
    "read_syncs",
    "recent_syncs",
    "reverse_translator",
    "syncs_location",
    "translator",
]

_LABEL = "failover"


class Unreachable(KafkaClientError):
    """A cluster did not answer; names its alias and bootstrap servers."""

    def __init__(self, alias: str, bootstrap: str, cause: Exception) -> None:
        super().__init__(
            f"cluster {alias!r} ({bootstrap or 'no bootstrap.servers'}) did not answer: {cause}",
            retriable=True,
        )
        self.alias = alias


@dataclass(frozen=True)
class SyncsLocation:
    """Where a flow's offset syncs live: cluster alias, its client settings and the topic."""

    alias: str
    admin_config: dict[str, str]
    consumer_config: dict[str, str]
    producer_config: dict[str, str]
    topic: str

    def create_topic(self, replication_factor: int) -> None:
        """Create the compacted topic unless it exists (the source and checkpoint tasks both
        may come first)."""
        TopicAdmin(self.admin_config).create_compacted_topic(
            self.topic, replication_factor=replication_factor
        )


def syncs_location(
    flow: Flow, *, connector: str = SOURCE, label: str | None = None
) -> SyncsLocation:
    """`mm2-offset-syncs.<target>.internal` on the source (location=source, the default), or
    `mm2-offset-syncs.<source>.internal` on the target (location=target): the name carries the
    alias of the cluster the topic is not on. Client ids end in `<label>-admin` etc., the label
    being `offset-syncs-<side>` unless given."""
    policy = flow.replication_policy()
    if flow.settings.source.offset_syncs_topic_location == "target":
        side, on, named_for = "target", flow.target, flow.source
        admin, consumer, producer = (
            flow.target_admin_config,
            flow.target_consumer_config,
            flow.target_producer_config,
        )
    else:
        side, on, named_for = "source", flow.source, flow.target
        admin, consumer, producer = (
            flow.source_admin_config,
            flow.source_consumer_config,
            flow.source_producer_config,
        )
    label = label or f"offset-syncs-{side}"
    return SyncsLocation(
        on,
        admin(connector, f"{label}-admin"),
        consumer(connector, f"{label}-consumer"),
        producer(connector, f"{label}-producer"),
        policy.offset_syncs_topic(named_for),
    )


def read_syncs(
    location: SyncsLocation, *, timeout: float
) -> list[tuple[OffsetSync, PrevSync | None]] | None:
    """Every sync in log order with its decoded header; None when the topic does not exist.

    Raises Unreachable when the cluster holding it does not answer.
    """
    records: list[LogRecord] = []
    if not _read(location, None, timeout, records.extend):
        return None
    return decode_syncs(records)


def recent_syncs(
    location: SyncsLocation, keep: int, *, last: int | None, timeout: float
) -> dict[tuple[str, int], list[OffsetSync]] | None:
    """The latest `keep` syncs of each source partition, oldest first, found in the topic's
    last `last` records (None: all of them); None when the topic does not exist. Read a batch
    at a time: a busy flow's syncs topic holds millions of records until compaction (a million
    read whole took 12 s and 600 MiB).

    Raises Unreachable when the cluster holding it does not answer.
    """
    out: dict[tuple[str, int], list[OffsetSync]] = {}

    def keep_latest(batch: list[LogRecord]) -> None:
        for sync, _ in decode_syncs(batch):
            kept = out.setdefault((sync.topic, sync.partition), [])
            kept.append(sync)
            del kept[:-keep]

    return out if _read(location, last, timeout, keep_latest) else None


def _read(
    location: SyncsLocation,
    last: int | None,
    timeout: float,
    each: Callable[[list[LogRecord]], object],
) -> bool:
    """Give `each` the topic's records (its last `last`, None: all), a batch at a time; False
    when the topic does not exist. Raises Unreachable when its cluster does not answer."""
    bootstrap = location.admin_config.get("bootstrap.servers", "")
    try:
        topics = TopicAdmin(location.admin_config, timeout=timeout).list_topics()
        if location.topic not in topics:
            return False
        reader = LogReader(location.consumer_config, location.topic)
        try:
            if last is not None:
                reader.skip_to_last(last)
            for batch in reader.read_batches(timeout=timeout):
                each(batch)
        finally:
            reader.close()
    except KafkaClientError as exc:
        raise Unreachable(location.alias, bootstrap, exc) from exc
    return True


def decode_syncs(records: Iterable[LogRecord]) -> list[tuple[OffsetSync, PrevSync | None]]:
    """Offset syncs with their decoded `mm2.prev-sync` headers; malformed records skipped."""
    out = []
    for record in records:
        if record.key is None or record.value is None:
            continue
        try:
            sync = OffsetSync.from_record(record.key, record.value)
        except RecordFormatError:
            continue
        out.append((sync, decode_prev_sync(record.headers.get(PREV_SYNC_HEADER))))
    return out


def translator(syncs: list[tuple[OffsetSync, PrevSync | None]]) -> OffsetTranslator:
    """Forward translation over every sync read (not only the last, as a fresh task keeps)."""
    t = OffsetTranslator(initialization_must_read_to_end=False)
    for sync, prev in syncs:
        t.handle(sync, prev)
    t.mark_read_to_end()
    return t


def reverse_translator(syncs: list[tuple[OffsetSync, PrevSync | None]]) -> ReverseTranslator:
    r = ReverseTranslator()
    for sync, prev in syncs:
        r.handle(sync, prev)
    return r
