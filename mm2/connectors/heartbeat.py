"""MirrorHeartbeatConnector: a Heartbeat on the target every emit.heartbeats.interval.seconds."""

from __future__ import annotations

import time
from collections.abc import Mapping

from mm2.config.model import HEARTBEAT, Flow
from mm2.connect.spi import Task, TaskContext
from mm2.connectors.flow_connector import FlowConnector
from mm2.kafka.producer import RecordProducer
from mm2.kafka.topics import TopicAdmin
from mm2.records import Heartbeat

__all__ = ["MirrorHeartbeatConnector", "MirrorHeartbeatTask"]


class MirrorHeartbeatTask(Task):
    """Writes Heartbeat(source, target, now) to the target's heartbeats topic."""

    def start(self, config: Mapping[str, str], context: TaskContext) -> None:
        flow = Flow.for_connector(config)
        self._liveness = context.liveness
        self._source, self._target = flow.source, flow.target
        settings = flow.settings.heartbeat
        self._interval = float(settings.emit_heartbeats_interval_seconds or 1)
        self._topic = flow.replication_policy().heartbeats_topic()
        admin = TopicAdmin(flow.target_admin_config(HEARTBEAT, "heartbeats-target-admin"))
        admin.create_compacted_topic(
            self._topic,
            replication_factor=settings.heartbeats_topic_replication_factor,
        )
        self._producer = RecordProducer(
            flow.target_producer_config(HEARTBEAT, "heartbeats-producer")
        )

    def poll(self) -> float:
        self._producer.raise_failure()
        now = int(time.time() * 1000)
        beat = Heartbeat(self._source, self._target, now)
        self._producer.send_record(
            self._topic,
            beat,
            timestamp=now,
            on_ack=lambda: self._liveness.heartbeat(self._source, self._target, now / 1000),
        )
        return self._interval

    def stop(self) -> None:
        producer = getattr(self, "_producer", None)
        if producer is not None:
            producer.close()


class MirrorHeartbeatConnector(FlowConnector):
    """One task whatever `enabled` says (as Apache), none when emit.heartbeats.enabled=false."""

    task_class = MirrorHeartbeatTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        if self._flow.settings.heartbeat.emit_heartbeats_interval_seconds is None:
            return []
        return [dict(self._config)]
