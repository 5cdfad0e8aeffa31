"""Spec factories: what the planner hands a copy task, built in one call with defaults that fit
most tests, so a test names only what it is about.

    copy_spec()                                     # primary->backup, task 0, transactional
    copy_spec(transactional=False, partitions=[Assignment("orders", 0, "primary.orders", 10)])
    copy_spec(flow="a->b", task=1, epoch="e1", assignments_from=42)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypedDict, Unpack

from mm2.copy.spec import Assignment, CopyTaskSpec

FLOW = "primary->backup"
CONNECTOR = "MirrorSourceConnector"


class CopySpecFields(TypedDict, total=False):
    """CopyTaskSpec's fields that copy_spec takes as they are (flow, task, partitions and the
    transactional id are its own keywords)."""

    connector: str
    source_alias: str
    source_cluster_id: str
    source_consumer: dict[str, str]
    target_producer: dict[str, str]
    offsets_topic: str
    boundary_ms: int
    transaction_timeout_ms: int
    skip_oversized: bool
    syncs_topic: str
    syncs_producer: dict[str, str] | None
    offset_lag_max: int
    epoch: str
    assignments_from: int
    offsets_consumer: dict[str, str] | None
    topic_limits: dict[str, int]
    schema_ids: bool
    schema_id_keys: bool
    schema_id_values: bool
    schema_wait_ms: int


def copy_spec(
    *,
    flow: str = FLOW,
    task: int = 0,
    transactional: bool = True,
    partitions: Sequence[Assignment] | None = None,
    **fields: Unpack[CopySpecFields],
) -> CopyTaskSpec:
    """A CopyTaskSpec for `flow`'s task `task`. Unless given: the flow's source is the source
    alias (cluster id `c1`), the clients bootstrap from `s:9092` and `t:9092`, positions go to
    `mm2-offsets.<source>.internal`, and the task copies `orders` partition 0 into
    `<source>.orders` from where nothing was stored. `transactional` gives it the id the planner
    would (`<source>-mm2-<connector>-<task>`); without, it copies at least once."""
    source = flow.partition("->")[0]
    settings: CopySpecFields = {
        "connector": CONNECTOR,
        "source_alias": source,
        "source_cluster_id": "c1",
        "source_consumer": {"bootstrap.servers": "s:9092"},
        "target_producer": {"bootstrap.servers": "t:9092"},
        "offsets_topic": f"mm2-offsets.{source}.internal",
    }
    settings.update(fields)
    transactional_id = (
        f"{settings['source_alias']}-mm2-{settings['connector']}-{task}" if transactional else None
    )
    return CopyTaskSpec(
        flow=flow,
        task=task,
        partitions=[Assignment("orders", 0, f"{source}.orders")]
        if partitions is None
        else list(partitions),
        transactional_id=transactional_id,
        **settings,
    )
