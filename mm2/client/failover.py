"""Failover and failback of a consumer group between two mirrored clusters.

`plan_failover(flow A->B, group)` reads the group's live commits on A and translates them with
the offset syncs of A->B (exact where the syncs prove it); if A does not answer it falls back to
the latest checkpoints on B and says so. `apply_failover` commits the plan to the group on B,
refusing while the group has members there and never moving a commit backwards unless forced.
`plan_failover(flow B->A, group, reverse_flow=A->B, failback=True)` is the return trip: commits
on remote topics (`primary.orders`) go home through the A->B syncs read in reverse, commits on
B's own topics go forward through the B->A syncs.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from mm2.client.mirror_client import MirrorClient
from mm2.client.plan import (
    FailoverError,
    FailoverPlan,
    commits_for,
    moves_from_checkpoints,
    plan_partitions,
)
from mm2.client.syncs import (
    Unreachable,
    read_syncs,
    reverse_translator,
    syncs_location,
    translator,
)
from mm2.config import Flow
from mm2.errors import KafkaClientError
from mm2.kafka.first_record import FirstRecordProbe
from mm2.kafka.groups import GroupAdmin
from mm2.offset_syncs.exact_index import PrevSync
from mm2.offset_syncs.reverse import ReverseTranslator
from mm2.offset_syncs.translator import FirstRecord, OffsetTranslator
from mm2.policies.filter import mirrors_group
from mm2.records import OffsetAndMetadata, OffsetSync, TopicPartition

__all__ = [
    "Applied",
    "apply_failover",
    "mirrored_groups",
    "plan_failover",
    "target_group_admin",
    "translate_all_groups",
]

DEFAULT_TIMEOUT = 15.0


@dataclass(frozen=True)
class Applied:
    """What apply_failover committed, and the partitions kept because the target was ahead."""

    committed: dict[TopicPartition, OffsetAndMetadata]
    kept: dict[TopicPartition, tuple[int, int]]  # (current, planned)

    def to_json(self) -> dict[str, object]:
        return {
            "committed": [
                {"topic": tp.topic, "partition": tp.partition, "offset": om.offset}
                for tp, om in sorted(self.committed.items())
            ],
            "kept": [
                {"topic": tp.topic, "partition": tp.partition, "current": now, "planned": planned}
                for tp, (now, planned) in sorted(self.kept.items())
            ],
        }


def plan_failover(
    flow: Flow,
    group: str,
    *,
    reverse_flow: Flow | None = None,
    failback: bool = False,
    from_checkpoints: bool = False,
    timeout: float = DEFAULT_TIMEOUT,
) -> FailoverPlan:
    """Plan moving `group` from flow.source to flow.target. `reverse_flow` (target->source) is
    used for topics that came from the target (active/active). With `failback` the plan returns
    the group home: flow is B->A, the group keeps its name, and `reverse_flow` (A->B) translates
    the remote topics it consumed on B back to A's originals."""
    kind = "failback" if failback else "failover"
    return _plan(kind, flow, group, reverse_flow, from_checkpoints, timeout)


def translate_all_groups(
    flow: Flow, *, reverse_flow: Flow | None = None, timeout: float = DEFAULT_TIMEOUT
) -> list[FailoverPlan]:
    """Every group on flow.source that the flow mirrors (its group filter; mm2's own groups
    left out) translated to flow.target in one pass, as KIP-1239 translates them: the offset
    syncs are read once and each side's commits asked in one go. Groups without commits are
    left out."""
    source, target = flow.source, flow.target
    policy = flow.replication_policy()
    source_config = flow.source_admin_config(label="translate-source-admin")
    source_admin = GroupAdmin(source_config, timeout=timeout)
    try:
        groups = _mirrored(flow, source_admin)
        commits = source_admin.committed_offsets(groups)
    except KafkaClientError as exc:
        raise Unreachable(source, _servers(source_config), exc) from exc
    groups = [g for g in groups if commits.get(g)]
    renaming = flow.group_mirroring_policy()
    renamed = {g: renaming.target_group(source, g) for g in groups}
    target_config = flow.target_admin_config(label="translate-target-admin")
    try:
        admin = GroupAdmin(target_config, timeout=timeout)
        current = admin.committed_offsets(sorted(set(renamed.values())))
    except KafkaClientError as exc:
        raise Unreachable(target, _servers(target_config), exc) from exc
    notes: list[str] = []
    topics = {tp.topic for g in groups for tp in commits[g]}
    forward, backward = _translators(flow, reverse_flow, topics, notes, timeout)
    mirrored = flow.topic_filter().should_replicate_topic
    plans = []
    with first_records(flow, timeout) as first_record:
        for group in sorted(groups):
            moves = plan_partitions(
                commits[group],
                policy=policy,
                source=source,
                target=target,
                mirrored=mirrored,
                forward=forward,
                backward=backward,
                current=current.get(renamed[group], {}),
                first_record=first_record,
            )
            plans.append(
                FailoverPlan(
                    "failover",
                    group,
                    source,
                    target,
                    "offset syncs",
                    tuple(moves),
                    tuple(notes),
                    renamed[group],
                )
            )
    return plans


@contextmanager
def first_records(flow: Flow, timeout: float) -> Iterator[FirstRecord]:
    """The first record flow.source holds at or after an offset, read as the flow's copy tasks
    read it (their consumer settings): for commits older than every offset sync kept, in
    offsets compaction removed. The consumer is made on the first question."""
    probe: list[FirstRecordProbe] = []

    def first_record(tp: TopicPartition, offset: int) -> int | None:
        if not probe:
            config = flow.source_consumer_config(label="failover-source-consumer")
            probe.append(
                FirstRecordProbe(
                    config, group="mm2-first-record-failover", timeout=min(timeout, 10.0)
                )
            )
        return probe[0].first_at_or_after(tp.topic, tp.partition, offset)

    try:
        yield first_record
    finally:
        for p in probe:
            p.close()


def _mirrored(flow: Flow, source_admin: GroupAdmin) -> list[str]:
    group_filter = flow.group_filter()
    return [g for g in source_admin.list_groups() if mirrors_group(group_filter, g)]


def mirrored_groups(flow: Flow, timeout: float = DEFAULT_TIMEOUT) -> list[str]:
    """The groups on flow.source that the flow mirrors (its group filter; mm2's own left out)."""
    config = flow.source_admin_config(label="translate-source-admin")
    try:
        return _mirrored(flow, GroupAdmin(config, timeout=timeout))
    except KafkaClientError as exc:
        raise Unreachable(flow.source, _servers(config), exc) from exc


def target_group_admin(flow: Flow, timeout: float = DEFAULT_TIMEOUT) -> GroupAdmin:
    return GroupAdmin(flow.target_admin_config(label="failover-target-admin"), timeout=timeout)


def _committed(
    admin: GroupAdmin, group: str, alias: str, bootstrap: str
) -> dict[TopicPartition, OffsetAndMetadata]:
    try:
        return admin.committed_offsets([group])[group]
    except KafkaClientError as exc:
        raise Unreachable(alias, bootstrap, exc) from exc


def _plan(
    kind: str,
    flow: Flow,
    group: str,
    other: Flow | None,
    from_checkpoints: bool,
    timeout: float,
) -> FailoverPlan:
    source, target = flow.source, flow.target
    policy = flow.replication_policy()
    renamed = _renamed(kind, flow, group)
    source_config = flow.source_admin_config(label="failover-source-admin")
    target_config = flow.target_admin_config(label="failover-target-admin")
    current = _committed(
        GroupAdmin(target_config, timeout=timeout), renamed, target, _servers(target_config)
    )
    notes: list[str] = []
    commits: dict[TopicPartition, OffsetAndMetadata] = {}
    if not from_checkpoints:
        try:
            admin = GroupAdmin(source_config, timeout=timeout)
            commits = _committed(admin, group, source, _servers(source_config))
        except Unreachable as exc:
            notes.append(f"{exc}; using the latest checkpoints on {target!r} instead")
            from_checkpoints = True
    if from_checkpoints:
        client = MirrorClient(
            flow.target_consumer_config(label="failover-checkpoints"), policy, timeout=timeout
        )
        checkpoints = client.checkpoints(group, source)
        if not checkpoints:
            raise FailoverError(
                f"{target!r} holds no checkpoints of group {group!r} from {source!r} "
                f"(topic {policy.checkpoints_topic(source)})" + (f"; {notes[0]}" if notes else "")
            )
        moves = moves_from_checkpoints(
            checkpoints, policy=policy, source=source, target=target, current=current
        )
        return FailoverPlan(
            kind, group, source, target, "checkpoints", tuple(moves), tuple(notes), renamed
        )
    if not commits:
        raise FailoverError(
            f"group {group!r} has no committed offsets on {source!r} ({_servers(source_config)})"
        )
    topics = {tp.topic for tp in commits}
    forward, backward = _translators(flow, other, topics, notes, timeout)
    topic_filter = flow.topic_filter()
    with first_records(flow, timeout) as first_record:
        moves = plan_partitions(
            commits,
            policy=policy,
            source=source,
            target=target,
            mirrored=topic_filter.should_replicate_topic,
            forward=forward,
            backward=backward,
            current=current,
            first_record=first_record,
        )
    return FailoverPlan(
        kind, group, source, target, "offset syncs", tuple(moves), tuple(notes), renamed
    )


def _renamed(kind: str, flow: Flow, group: str) -> str:
    """The group's name on the target: a failover follows the flow's group.mirroring.policy;
    a failback returns to the name given (the group's name on its original cluster)."""
    if kind != "failover":
        return group
    return flow.group_mirroring_policy().target_group(flow.source, group)


def _translators(
    flow: Flow, other: Flow | None, topics: Iterable[str], notes: list[str], timeout: float
) -> tuple[OffsetTranslator | None, ReverseTranslator | None]:
    """The flow's offset syncs, and the reverse flow's (`other`) where one of `topics` came
    from the target (active/active); a missing syncs topic is said in `notes`."""
    syncs = _flow_syncs(flow, notes, timeout)
    forward = None if syncs is None else translator(syncs)
    policy = flow.replication_policy()
    if other is None or not any(policy.topic_source(t) == flow.target for t in topics):
        return forward, None
    back = _flow_syncs(other, notes, timeout)
    return forward, None if back is None else reverse_translator(back)


def _flow_syncs(
    flow: Flow, notes: list[str], timeout: float
) -> list[tuple[OffsetSync, PrevSync | None]] | None:
    """Every offset sync of the flow; None, said in `notes`, when it has no syncs topic."""
    location = syncs_location(flow, label="failover")
    syncs = read_syncs(location, timeout=timeout)
    if syncs is None:
        notes.append(f"no {location.topic} on {location.alias!r}: {flow.name} has mirrored nothing")
    return syncs


def _servers(config: dict[str, str]) -> str:
    return config.get("bootstrap.servers", "")


def apply_failover(plan: FailoverPlan, target_admin: GroupAdmin, *, force: bool = False) -> Applied:
    """Commit the plan to the group on the target cluster.

    Refuses while the group is active there (its members would overwrite the commits, and the
    broker rejects them anyway). A target commit ahead of the plan is kept unless `force`.
    """
    group = plan.committed_as
    state = target_admin.describe([group])[group]
    if state.active:
        raise FailoverError(
            f"group {group!r} is active on {plan.target!r}: state {state.state}, "
            f"{state.members} member(s); stop its consumers there first"
        )
    if not plan.translated:
        raise FailoverError(
            f"nothing to commit: no partition of group {group!r} could be translated "
            f"({'; '.join(sorted({m.note for m in plan.untranslated}))})"
        )
    current = target_admin.committed_offsets([group])[group]
    commit, kept = commits_for(plan, current, force=force)
    if commit and not target_admin.alter_offsets(group, commit):
        raise FailoverError(
            f"group {group!r} on {plan.target!r} was joined by a member while its offsets were "
            "being committed: nothing was committed; stop its consumers there and run it again"
        )
    return Applied(commit, kept)
