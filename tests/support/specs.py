"""Spec factories: what the planner hands a copy task, built in one call with defaults that fit
most tests, so a test names only what it is about.

    copy_spec()                                     # primary->backup, task 0, transactional
    copy_spec(transactional=False, partitions=[Assignment("orders", 0, "primary.orders", 10)])
    copy_spec(flow="a->b", task=1, epoch="e1", offsets_consumer={"bootstrap.servers": "b:9092"})
    copy_spec(settings=copy_settings(skip_oversized_records=True))
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TypedDict, Unpack

from mm2.config.copy_settings import copy_settings as build_copy_settings
from mm2.config.settings import flow_settings
from mm2.copy.settings import CopySettings
from mm2.copy.spec import Assignment, CopyTaskSpec

FLOW = "primary->backup"
CONNECTOR = "MirrorSourceConnector"


class CopySettingsFields(TypedDict, total=False):
    """CopySettings' fields a test may set (the rest are mm2.config's defaults)."""

    tasks_max: int
    exactly_once: bool
    source_consumer: dict[str, str]
    target_producer: dict[str, str]
    source_admin: dict[str, str]
    transaction_boundary_interval_ms: int
    offset_lag_max: int
    skip_oversized_records: bool
    schema_ids: bool
    schema_ids_keys: bool
    schema_ids_values: bool
    schema_ids_wait_ms: int
    key_subject_name_strategy: str
    value_subject_name_strategy: str


class CopySpecFields(TypedDict, total=False):
    """CopyTaskSpec's fields that copy_spec takes as they are (settings, task, partitions and
    the transactional id are its own keywords)."""

    connector: str
    source_cluster_id: str
    offsets_topic: str
    syncs_topic: str
    syncs_producer: dict[str, str] | None
    epoch: str
    offsets_consumer: dict[str, str] | None
    offsets_admin: dict[str, str] | None
    topic_limits: dict[str, int]


def copy_settings(flow: str = FLOW, **fields: Unpack[CopySettingsFields]) -> CopySettings:
    """The value mm2.config builds for `flow` with nothing set (its defaults), its clients
    bootstrapping from `s:9092` and `t:9092` (no source admin: the copy tasks ask the source
    for no topic ids), with `fields` in place of what a test is about."""
    source, _, target = flow.partition("->")
    built = build_copy_settings(
        flow_settings(source, {}, {}, {}, {}),
        source=source,
        target=target,
        source_consumer={"bootstrap.servers": "s:9092"},
        target_producer={"bootstrap.servers": "t:9092"},
        source_admin={},
        mirrors_schemas=False,
    )
    return dataclasses.replace(built, **fields)


def copy_spec(
    *,
    flow: str = FLOW,
    settings: CopySettings | None = None,
    task: int = 0,
    transactional: bool = True,
    partitions: Sequence[Assignment] | None = None,
    **fields: Unpack[CopySpecFields],
) -> CopyTaskSpec:
    """A CopyTaskSpec for `flow`'s task `task`, with `settings` (copy_settings(flow) unless
    given). Unless given: the source cluster's id is `c1`, positions go to
    `mm2-offsets.<source>.internal`, and the task copies `orders` partition 0 into
    `<source>.orders` from where nothing was stored. `transactional` gives it the id the planner
    would (`<source>-mm2-<connector>-<task>`); without, it copies at least once."""
    settings = copy_settings(flow) if settings is None else settings
    source = settings.source
    spec: CopySpecFields = {
        "connector": CONNECTOR,
        "source_cluster_id": "c1",
        "offsets_topic": f"mm2-offsets.{source}.internal",
    }
    spec.update(fields)
    transactional_id = f"{source}-mm2-{spec['connector']}-{task}" if transactional else None
    return CopyTaskSpec(
        settings=settings,
        task=task,
        partitions=[Assignment("orders", 0, f"{source}.orders")]
        if partitions is None
        else list(partitions),
        transactional_id=transactional_id,
        **spec,
    )
