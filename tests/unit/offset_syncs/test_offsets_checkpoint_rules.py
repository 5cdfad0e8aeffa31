"""Checkpoint decisions against MirrorCheckpointTaskTest (reference §4.4, §9.2)."""

from __future__ import annotations

from collections.abc import Callable

from mm2.offset_syncs.checkpoint_rules import (
    checkpoint_for,
    checkpoint_is_more_recent,
    checkpoints_for_group,
    group_offsets_to_sync,
    rename_topic_partition,
    sync_group_offsets,
)
from mm2.offset_syncs.sync_store import OffsetSyncStore
from mm2.records import Checkpoint, OffsetAndMetadata, OffsetSync, TopicPartition


class DefaultPolicyStandIn:
    """Just enough of DefaultReplicationPolicy (separator '.') for these tests."""

    def format_remote_topic(self, source_cluster_alias: str, topic: str) -> str:
        return f"{source_cluster_alias}.{topic}"

    def topic_source(self, topic: str) -> str | None:
        parts = topic.split(".")
        return parts[0] if len(parts) >= 2 else None

    def original_topic(self, topic: str) -> str:
        source = self.topic_source(topic)
        return topic if source is None else self.original_topic(topic[len(source) + 1 :])


POLICY = DefaultPolicyStandIn()


def renamer() -> Callable[[TopicPartition], TopicPartition]:
    return lambda tp: rename_topic_partition(POLICY, "source1", "target2", tp)


def store_with(*syncs: tuple[TopicPartition, int, int], must_read_to_end: bool) -> OffsetSyncStore:
    store = OffsetSyncStore(initialization_must_read_to_end=must_read_to_end)
    for tp, up, down in syncs:
        store.handle_record(OffsetSync(tp.topic, tp.partition, up, down))
    store.mark_read_to_end()
    return store


def test_downstream_topic_renaming() -> None:
    rename = renamer()
    assert rename(TopicPartition("topic3", 4)) == TopicPartition("source1.topic3", 4)
    assert rename(TopicPartition("target2.topic3", 5)) == TopicPartition("topic3", 5)
    assert rename(TopicPartition("source6.topic7", 8)) == TopicPartition(
        "source1.source6.topic7", 8
    )


def test_checkpoint_translates_one_past_and_exact() -> None:
    store = store_with(must_read_to_end=True)
    store.handle_record(OffsetSync("topic1", 2, 3, 4))
    store.handle_record(OffsetSync("target2.topic5", 6, 7, 8))
    cp1 = checkpoint_for(
        "group9",
        TopicPartition("topic1", 2),
        OffsetAndMetadata(10),
        store.translate_downstream,
        renamer(),
    )
    assert cp1 == Checkpoint("group9", "source1.topic1", 2, 10, 5, "")
    cp2 = checkpoint_for(
        "group11",
        TopicPartition("target2.topic5", 6),
        OffsetAndMetadata(7),
        store.translate_downstream,
        renamer(),
    )
    assert cp2 == Checkpoint("group11", "topic5", 6, 7, 8, "")


def test_no_checkpoint_without_offset_syncs_or_without_committed_offset() -> None:
    store = store_with((TopicPartition("topic1", 0), 3, 4), must_read_to_end=True)
    translate = store.translate_downstream
    assert (
        checkpoint_for("g", TopicPartition("topic1", 1), OffsetAndMetadata(5), translate, renamer())
        is None
    )
    assert checkpoint_for("g", TopicPartition("topic1", 0), None, translate, renamer()) is None


def test_checkpoint_is_more_recent() -> None:
    last = Checkpoint("g", "t", 0, 100, 50)
    assert checkpoint_is_more_recent(last, None)
    assert checkpoint_is_more_recent(Checkpoint("g", "t", 0, 99, 10), last), "upstream rewind"
    assert checkpoint_is_more_recent(Checkpoint("g", "t", 0, 120, 51), last)
    assert not checkpoint_is_more_recent(Checkpoint("g", "t", 0, 120, 50), last), "equal down"
    assert not checkpoint_is_more_recent(Checkpoint("g", "t", 0, 120, 49), last), "smaller down"


def test_checkpoints_task_restart_uses_existing_checkpoints() -> None:
    t1p0 = TopicPartition("t1", 0)
    store = store_with(*[(t1p0, i, i) for i in (100, 200, 300)], must_read_to_end=False)

    def run(offset: int, previous: dict[TopicPartition, Checkpoint]) -> list[Checkpoint]:
        return checkpoints_for_group(
            "group1",
            {t1p0: OffsetAndMetadata(offset)},
            translate=store.translate_downstream,
            rename=renamer(),
            previous=previous,
            topic_filter=lambda _topic: True,
        )

    first = run(250, {})
    assert first == [Checkpoint("group1", "source1.t1", 0, 250, 201, "")]
    loaded = {cp.topic_partition: cp for cp in first}

    # restart: the sync topic moved on and 100->100 is gone
    store = store_with(*[(t1p0, i, i) for i in (175, 275, 375, 475)], must_read_to_end=False)
    assert store.translate_downstream(t1p0, 250) == 176
    assert store.translate_downstream(t1p0, 370) == 176
    assert run(250, loaded) == [], "176 < 201: suppressed"
    assert run(370, loaded) == [], "176 < 201: suppressed"
    assert run(400, loaded) == [Checkpoint("group1", "source1.t1", 0, 400, 376, "")]


def test_checkpoints_for_group_filters() -> None:
    keep, filtered, unsynced, too_old = (TopicPartition(t, 0) for t in ("a", "b", "c", "d"))
    store = store_with(
        (keep, 10, 110), (filtered, 10, 110), (too_old, 50, 150), must_read_to_end=True
    )
    result = checkpoints_for_group(
        "g",
        {
            keep: OffsetAndMetadata(12, "meta"),
            filtered: OffsetAndMetadata(12),
            unsynced: OffsetAndMetadata(12),
            too_old: OffsetAndMetadata(12),
            TopicPartition("a", 1): None,
        },
        translate=store.translate_downstream,
        rename=renamer(),
        previous={},
        topic_filter=lambda topic: topic != "b",
    )
    assert result == [Checkpoint("g", "source1.a", 0, 12, 111, "meta")]


def test_checkpoint_records_monotonic_if_store_rewinds() -> None:
    tp = TopicPartition("t1", 0)
    store = store_with((tp, 100, 100), must_read_to_end=True)
    previous: dict[TopicPartition, Checkpoint] = {}

    def run(offset: int) -> list[Checkpoint]:
        out = checkpoints_for_group(
            "g",
            {tp: OffsetAndMetadata(offset)},
            translate=store.translate_downstream,
            rename=renamer(),
            previous=previous,
            topic_filter=lambda _t: True,
        )
        previous.update({cp.topic_partition: cp for cp in out})
        return out

    assert [cp.downstream_offset for cp in run(110)] == [101]
    store.handle_record(OffsetSync("t1", 0, 200, 60))  # downstream went backwards
    assert run(110) == [], "same upstream, not more recent"
    assert [cp.downstream_offset for cp in run(90)] == [], "translates to -1: dropped"


def test_sync_offset_writes_when_target_is_lower() -> None:
    t1p0, t2p0 = TopicPartition("topic1", 0), TopicPartition("topic2", 0)
    checkpoints = {
        "consumer1": {t1p0: Checkpoint("consumer1", "topic1", 0, 200, 101, "metadata")},
        "consumer2": {t2p0: Checkpoint("consumer2", "topic2", 0, 100, 51, "metadata")},
    }
    idle = {
        "consumer1": {t1p0: OffsetAndMetadata(100)},
        "consumer2": {t2p0: OffsetAndMetadata(50)},
    }
    out = sync_group_offsets(checkpoints, idle)
    assert out["consumer1"][t1p0] == OffsetAndMetadata(101, "metadata")
    assert out["consumer2"][t2p0] == OffsetAndMetadata(51, "metadata")


def test_sync_offset_for_target_group_with_null_offset_and_metadata() -> None:
    tp = TopicPartition("topic", 0)
    checkpoints = {"consumer": {tp: Checkpoint("consumer", "topic", 0, 200, 101, "metadata")}}
    out = sync_group_offsets(checkpoints, {"consumer": {tp: None}})
    assert out == {"consumer": {tp: OffsetAndMetadata(101, "metadata")}}


def test_sync_offset_never_moves_backwards_and_skips_unchanged_groups() -> None:
    tp, new_tp = TopicPartition("t", 0), TopicPartition("t", 1)
    checkpoints = {
        "ahead": {tp: Checkpoint("ahead", "t", 0, 9, 5)},
        "equal": {tp: Checkpoint("equal", "t", 0, 9, 5)},
        "mixed": {
            tp: Checkpoint("mixed", "t", 0, 9, 5),
            new_tp: Checkpoint("mixed", "t", 1, 9, 7),
        },
        "not-idle": {tp: Checkpoint("not-idle", "t", 0, 9, 5)},
    }
    idle = {
        "ahead": {tp: OffsetAndMetadata(6)},
        "equal": {tp: OffsetAndMetadata(5)},
        "mixed": {tp: OffsetAndMetadata(8)},
    }
    out = sync_group_offsets(checkpoints, idle)
    assert out == {
        "mixed": {new_tp: OffsetAndMetadata(7)},
        "not-idle": {tp: OffsetAndMetadata(5)},
    }


def test_group_offsets_to_sync_for_a_non_idle_group_writes_everything() -> None:
    desired = {
        TopicPartition("t", 0): OffsetAndMetadata(1),
        TopicPartition("t", 1): OffsetAndMetadata(0),
    }
    assert group_offsets_to_sync(desired, None) == desired
    assert group_offsets_to_sync(desired, {}) == desired
