"""A flow's copy tasks' settings (mm2.copy.settings.CopySettings), built from its typed settings.

What every copy task of a flow reads, in one frozen value: `Flow.copy_settings` builds it once,
the planner hands it unchanged into each CopyTaskSpec. Every default it takes is a settings
class's own (mm2.config.settings); none is written here.
"""

from __future__ import annotations

from collections.abc import Mapping

from mm2.config.settings import FlowSettings
from mm2.copy.settings import CopySettings
from mm2.errors import ConfigError

__all__ = ["copy_settings", "exactly_once"]


def exactly_once(settings: FlowSettings, read_committed: bool) -> bool:
    """Apache's keys: `exactly.once.source.support` (per flow, top level, or the target's
    `<alias>.exactly.once.source.support`), enabled unless disabled; and the connector's
    `exactly.once.support=required`, which needs a read_committed source consumer."""
    on = settings.worker.exactly_once_source_support != "disabled"
    if settings.source.exactly_once_support == "required":
        if not on:
            raise ConfigError(
                "exactly.once.support=required, but exactly.once.source.support is disabled",
                key="exactly.once.support",
            )
        if not read_committed:
            raise ConfigError(
                "exactly.once.support=required needs the source consumer's "
                "isolation.level=read_committed",
                key="exactly.once.support",
            )
    return on


def copy_settings(
    settings: FlowSettings,
    *,
    source: str,
    target: str,
    source_consumer: Mapping[str, str],
    target_producer: Mapping[str, str],
    source_admin: Mapping[str, str],
    mirrors_schemas: bool,
) -> CopySettings:
    """The flow's copy tasks' settings (Flow.copy_settings): its typed settings, its source
    consumer, target producer and source admin in librdkafka's keys, and whether it mirrors
    schemas (its clusters both name a registry)."""
    # librdkafka reads committed data unless told otherwise (Java's default is uncommitted):
    # aborted transactions are not mirrored. Lag uses the same bound (the LSO).
    consumer = {"isolation.level": "read_committed", **source_consumer}
    s, schemas = settings.source, settings.schema
    return CopySettings(
        source=source,
        target=target,
        tasks_max=s.tasks_max,
        exactly_once=exactly_once(settings, consumer["isolation.level"] == "read_committed"),
        source_consumer=consumer,
        target_producer=dict(target_producer),
        source_admin=dict(source_admin),
        transaction_boundary_interval_ms=s.transaction_boundary_interval_ms,
        offset_lag_max=s.offset_lag_max,
        skip_oversized_records=s.skip_oversized_records,
        # The schema connector writes the ID map only while it runs: with it, IDs are rewritten.
        schema_ids=mirrors_schemas and schemas.sync_schemas_interval_seconds is not None,
        schema_ids_keys=schemas.ids_keys,
        schema_ids_values=schemas.ids_values,
        schema_ids_wait_ms=schemas.ids_wait_ms,
        key_subject_name_strategy=schemas.key_strategy,
        value_subject_name_strategy=schemas.value_strategy,
    )
