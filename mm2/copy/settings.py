"""CopySettings: a flow's settings for its copy tasks, one frozen value per flow.

mm2.config builds it once from the flow's typed settings, whose classes hold every default
(`Flow.copy_settings`, by mm2.config.copy_settings); the planner reads it and hands it
unchanged to every copy task in its CopyTaskSpec. It lives here, not in mm2.config, because a
Spark executor's Python has the copy path and confluent-kafka only: the value holds plain
values, crosses into a Spark task inside the spec's JSON and pickles as it is.

Nothing here has a default: a default written here too would be a second place for it.
What changes from one epoch or copy task to the next (partitions, transactional id, epoch,
leadership, topic limits) is in the spec, not here.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CopySettings"]


@dataclass(frozen=True)
class CopySettings:
    """Named after the Kafka keys they come from (`offset.lag.max` -> `offset_lag_max`)."""

    # source.cluster.alias, target.cluster.alias
    source: str
    target: str
    # How many copy tasks run at most (Spark's free slots may allow fewer).
    tasks_max: int
    # exactly.once.source.support (the worker's) and exactly.once.support (the connector's):
    # transactional copy tasks, fenced before every epoch.
    exactly_once: bool
    # The source consumer and the target producer, in librdkafka's keys (plain dicts), and the
    # source's admin client: before each commit a copy task asks the source for the ids of the
    # topics it copied records of (mm2.copy.loop: a topic deleted and created again; {}: never).
    source_consumer: dict[str, str]
    target_producer: dict[str, str]
    source_admin: dict[str, str]
    transaction_boundary_interval_ms: int
    offset_lag_max: int
    # Ours: a record larger than the target takes is skipped (logged) instead of failing.
    skip_oversized_records: bool
    # Ours: the flow mirrors schemas (its schema connector runs), so copy tasks rewrite schema
    # IDs through its map (mm2.copy.schema_gate): schema.ids.keys and schema.ids.values say
    # which, schema.ids.wait.ms how long a partition held at a record whose ID is not mapped
    # yet waits before a WARN names it (it stays held), and Confluent's
    # key/value.subject.name.strategy (the class's simple name) which subjects describe a topic.
    schema_ids: bool
    schema_ids_keys: bool
    schema_ids_values: bool
    schema_ids_wait_ms: int
    key_subject_name_strategy: str
    value_subject_name_strategy: str

    @property
    def flow(self) -> str:
        """`source->target`, as Apache names a flow."""
        return f"{self.source}->{self.target}"
