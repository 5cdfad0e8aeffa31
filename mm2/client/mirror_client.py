"""MirrorClient: Apache MM2's MirrorClient / RemoteClusterUtils for one cluster, in Python.

Reads what MirrorMaker leaves on a cluster: its heartbeats topics (who replicates here and over
how many hops), its remote topics, and the checkpoints of consumer groups from other clusters,
which tell where a group would resume here (`remote_consumer_offsets`, alias
`translate_offsets`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from mm2.client import topology
from mm2.errors import RecordFormatError
from mm2.kafka.log_reader import LogReader, LogRecord
from mm2.kafka.topics import TopicAdmin
from mm2.policies.replication import ReplicationPolicy
from mm2.records import Checkpoint, OffsetAndMetadata, TopicPartition

__all__ = ["MirrorClient", "decode_checkpoints"]

# Settings a consumer config may carry that librdkafka warns about on an admin client.
_CONSUMER_ONLY = frozenset(
    {"group.id", "enable.auto.commit", "auto.offset.reset", "isolation.level", "group.instance.id"}
)


class MirrorClient:
    """Topology and checkpoints of the cluster `client_config` points at (librdkafka settings)."""

    def __init__(
        self,
        client_config: Mapping[str, str],
        policy: ReplicationPolicy,
        *,
        timeout: float = 30.0,
    ) -> None:
        self._config = dict(client_config)
        self.policy = policy
        self.timeout = timeout
        admin = {k: v for k, v in self._config.items() if k not in _CONSUMER_ONLY}
        self._admin = TopicAdmin(admin, timeout=timeout)

    def list_topics(self) -> set[str]:
        return set(self._admin.list_topics())

    # -- topology, from topic names --
    def replication_hops(self, upstream_alias: str) -> int:
        """Fewest hops from `upstream_alias` to this cluster, -1 when it does not replicate here."""
        return topology.replication_hops(self.policy, self.list_topics(), upstream_alias)

    def heartbeat_topics(self) -> set[str]:
        return topology.heartbeat_topics(self.policy, self.list_topics())

    def checkpoint_topics(self) -> set[str]:
        return topology.checkpoint_topics(self.policy, self.list_topics())

    def upstream_clusters(self) -> set[str]:
        return topology.upstream_clusters(self.policy, self.list_topics())

    def remote_topics(self, source: str | None = None) -> set[str]:
        return topology.remote_topics(self.policy, self.list_topics(), source)

    # -- checkpoints --
    def checkpoints(self, group: str, remote_alias: str) -> dict[TopicPartition, Checkpoint]:
        """The latest checkpoint per local partition of `group` in `remote_alias`'s checkpoints
        topic; malformed records are skipped, a missing topic yields nothing."""
        latest: dict[TopicPartition, Checkpoint] = {}
        for cp in self._read_checkpoints(remote_alias):
            if cp.group_id == group:
                latest[cp.topic_partition] = cp
        return latest

    def _read_checkpoints(self, remote_alias: str) -> list[Checkpoint]:
        topic = self.policy.checkpoints_topic(remote_alias)
        if topic not in self.list_topics():
            return []
        reader = LogReader(self._config, topic)
        try:
            records = reader.read_to_end(timeout=self.timeout)
        finally:
            reader.close()
        return decode_checkpoints(records)

    def remote_consumer_offsets(
        self, group: str, remote_alias: str
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        """Where `group`, consuming on `remote_alias`, would resume here: local partitions
        with the latest checkpoint's downstream offset and metadata (Apache's translateOffsets).
        """
        return {
            tp: cp.offset_and_metadata() for tp, cp in self.checkpoints(group, remote_alias).items()
        }

    translate_offsets = remote_consumer_offsets


def decode_checkpoints(records: Iterable[LogRecord]) -> list[Checkpoint]:
    """The checkpoints among `records`, in order; tombstones and malformed records skipped
    (as Apache's CheckpointStore and MirrorClient do)."""
    out = []
    for record in records:
        if record.key is None or record.value is None:
            continue
        try:
            out.append(Checkpoint.from_record(record.key, record.value))
        except RecordFormatError:
            continue
    return out
