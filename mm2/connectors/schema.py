"""MirrorSchemaConnector: a flow's Schema Registry copied to its target's.

On for a flow whose two clusters both name a registry (`<alias>.schema.registry.url`). Its one
task runs a pass of mm2.schemas.sync.SchemaSync every `sync.schemas.interval.seconds` and writes
each source schema ID's target ID, each subject's source IDs, and after each finished pass the
number of passes, to the flow's offsets topic on the target (mm2.records.schema_ids), placed by
key as Connect places its offsets, where the copy tasks read them. At its start it reads back
what is there (the ID mode and the pass count carry on) and writes the whole map again in its
first pass, so an offsets topic lost and created again gets it back. Whether the flow keeps or
translates IDs is in the log (once, when decided or switched), in the task's REST status and in
the `mm2_schema_ids_translated` metric.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping

from mm2.config.model import SCHEMA, Flow, syncs_schemas
from mm2.connect.spi import Connector, Task, TaskContext
from mm2.copy.offsets_reader import OffsetsTopicReader
from mm2.copy.position_record import PARTITIONER
from mm2.copy.positions import PositionsTopic
from mm2.copy.schema_map import SchemaIdMap
from mm2.errors import ConfigError, KafkaClientError, MM2Error
from mm2.kafka.producer import RecordProducer
from mm2.kafka.topics import TopicAdmin
from mm2.policies.replication import PolicyConfigError
from mm2.records.schema_ids import SchemaIdMapping, SchemaPasses, SchemaRecord
from mm2.schemas.client import RegistryClient
from mm2.schemas.subjects import SubjectFilter, SubjectNaming
from mm2.schemas.sync import SchemaSync

__all__ = ["MirrorSchemaConnector", "MirrorSchemaTask"]

log = logging.getLogger(__name__)

_UNASSIGNED = -1  # the producer's partitioner places the record by its key
_TOPICS_FRESH_S = 1.0  # a topic not in the last listing is looked for again after this


class MirrorSchemaTask(Task):
    """Copies the source registry to the target's and writes the ID mappings to Kafka."""

    def start(self, config: Mapping[str, str], context: TaskContext) -> None:
        # Nothing that talks to Kafka or a registry here: one that is down is retried in poll().
        self._flow = flow = Flow.for_connector(config)
        self._metrics = context.metrics
        self._interval = float(flow.settings.schema.sync_schemas_interval_seconds or 1)
        try:
            self._subjects = SubjectFilter.from_config(config)
        except PolicyConfigError as exc:
            raise ConfigError(exc.detail, key=exc.key) from None
        self._source = RegistryClient.from_config(flow.schema_registry_config("source", SCHEMA))
        self._target = RegistryClient.from_config(flow.schema_registry_config("target", SCHEMA))
        self._positions = PositionsTopic.of(flow)
        self._producer: RecordProducer | None = None
        self._sync: SchemaSync | None = None
        # What Kafka acknowledged (or held at the start): a new SchemaSync starts from it.
        self._confirmed: dict[int | str, int | str] = {}
        self._passes = 0  # passes finished, as the offsets topic says
        self._topic_id = ""  # the offsets topic's id the map was written to
        self._admin: TopicAdmin | None = None
        self._topics: set[str] = set()
        self._topics_at = float("-inf")

    # -- setup, retried until the target cluster answers --
    def _setup(self) -> None:
        flow = self._flow
        self._positions.ensure()
        self._admin = TopicAdmin(self._positions.admin_config)
        self._topic_id = self._offsets_topic_id()
        held = SchemaIdMap(self._positions.topic, cluster=flow.source)
        reader: OffsetsTopicReader[None] = self._positions.tail(held.decode)
        try:  # every partition to what is committed now
            reader.read_to_end(30.0, stable=True)
        finally:
            reader.close()
        self._confirmed = {}
        self._confirmed.update(held.rewriter.ids.items())
        self._confirmed.update(held.rewriter.guids.items())
        self._passes = held.passes
        config = flow.target_producer_config(SCHEMA, "schema-ids-producer")
        # never creating a deleted offsets topic with the broker's defaults (PositionsTopic.ensure)
        self._producer = RecordProducer(
            {**config, **PARTITIONER, "allow.auto.create.topics": False}
        )
        log.info(
            "%s: schemas from %s to %s; %d schema ID mapping(s) read back from %s",
            flow.name,
            self._source.url,
            self._target.url,
            len(self._confirmed),
            self._positions.topic,
        )

    def _offsets_topic_id(self) -> str:
        assert self._admin is not None
        topic = self._positions.topic
        found = self._admin.topic_ids([topic]).get(topic)
        if found is None:
            raise KafkaClientError(
                f"{topic} is missing on {self._flow.target}: the schema-ID map waits until the "
                "flow's planner creates it again",
                retriable=True,
            )
        return found

    def _check_offsets_topic(self) -> None:
        """A new offsets topic (lost and created again) gets the whole map again: a new
        SchemaSync hands every mapping and subject once."""
        found = self._offsets_topic_id()
        if found != self._topic_id:
            log.warning(
                "%s: %s was created again (topic id %s, was %s): writing the whole "
                "schema-ID map to it again",
                self._flow.name,
                self._positions.topic,
                found,
                self._topic_id,
            )
            self._topic_id, self._sync = found, None

    def _new_sync(self) -> SchemaSync:
        flow = self._flow
        topic_filter = flow.topic_filter()
        naming = SubjectNaming(
            flow.replication_policy(),
            flow.source,
            flow.target,
            replicated=topic_filter.should_replicate_topic,
            is_topic=self._is_source_topic,
        )
        return SchemaSync(
            self._source,
            self._target,
            source_alias=flow.source,
            naming=naming,
            subjects=self._subjects,
            sink=self._send,
            known=self._confirmed,
            flow=flow.name,
            described=self._send,
        )

    def _is_source_topic(self, topic: str) -> bool:
        """Whether the source cluster has the topic (listed again when it is not found and
        the last listing is older than a second)."""
        if topic not in self._topics and time.monotonic() - self._topics_at > _TOPICS_FRESH_S:
            admin = TopicAdmin(self._flow.source_admin_config(SCHEMA, "schemas-source-admin"))
            self._topics = set(admin.list_topics())
            self._topics_at = time.monotonic()
        return topic in self._topics

    # -- the loop --
    def poll(self) -> float:
        if self._producer is None:
            self._setup()
        else:
            self._check_offsets_topic()
        if self._sync is None:
            self._sync = self._new_sync()
        try:
            report = self._sync.run_pass()
        finally:
            self._deliver()
        # Every subject and mapping of the pass acknowledged: the pass counts.
        self._send(SchemaPasses(self._flow.source, self._passes + 1))
        self._deliver()
        self._passes += 1
        self._metrics.record_schema_pass(
            self._flow.source,
            self._flow.target,
            id_mode=self._sync.id_mode or "translated",
            registered=report.registered,
            mappings=report.mappings,
        )
        if report.writes or report.mappings:
            log.info(
                "%s: schemas: %d version(s) registered, %d soft delete(s), %d level(s), "
                "%d ID mapping(s) written",
                self._flow.name,
                report.registered,
                report.deleted,
                report.configs,
                report.mappings,
            )
        return self._interval

    def _send(self, record: SchemaRecord) -> None:
        """The sync's sink: one record to the offsets topic; a mapping is confirmed once
        acknowledged."""
        assert self._producer is not None

        def acknowledged() -> None:
            if isinstance(record, SchemaIdMapping):
                self._confirmed[record.source] = record.target

        self._producer.send(
            self._positions.topic,
            record.key(),
            record.value(),
            partition=_UNASSIGNED,
            on_ack=acknowledged,
        )

    def _deliver(self) -> None:
        """Wait for the pass's mappings; if any failed, the sync is built again from those
        Kafka acknowledged, so that none is taken for written that was not."""
        assert self._producer is not None
        try:
            self._producer.flush()
        except MM2Error:
            self._sync = None
            raise

    def status_note(self) -> str | None:
        sync = self._sync
        if sync is None or sync.id_mode is None:
            return None
        says = "kept" if sync.id_mode == "kept" else "translated in flight"
        return (
            f"schema IDs {says}: {sync.id_mode_reason}; "
            f"{len(self._confirmed)} schema ID mapping(s) in {self._positions.topic}"
        )

    def stop(self) -> None:
        producer = getattr(self, "_producer", None)
        if producer is not None:
            producer.close()
        for client in (getattr(self, "_source", None), getattr(self, "_target", None)):
            if client is not None:
                client.close()


class MirrorSchemaConnector(Connector):
    """One task for an enabled flow whose clusters both name a Schema Registry; none when
    `sync.schemas.enabled = false`."""

    task_class = MirrorSchemaTask

    def start(self, config: Mapping[str, str]) -> None:
        self._config = dict(config)
        self._flow = Flow.for_connector(config)

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        wanted = self._flow.settings.schema.sync_schemas_interval_seconds is not None
        if not (self._flow.enabled and wanted and syncs_schemas(self._config)):
            return []
        return [{**self._config, "task.index": "0"}]
