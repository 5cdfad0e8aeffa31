"""The planner's first steps (mm2.connectors.epochs): the earlier copy tasks are fenced and the
positions read before it waits for Spark, and the first epoch starts on that settle. Built from
fakes handed to the planner, as the task's composition hands it the real parts."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Unpack

import pytest

from mm2.connect.spi import LeaderEpoch
from mm2.connectors.epochs import EpochPlanner, LazyPublisher
from mm2.connectors.left_open import LeftOpenWatch
from mm2.connectors.planner_parts import FlowParts
from mm2.connectors.settle import EndLeftOpen, Fencing, Settle
from mm2.connectors.task_specs import TaskSpecs
from mm2.copy.failure import CopyFailure
from mm2.copy.position_record import StoredPositions
from mm2.copy.rebuild import Proof
from mm2.copy.routes import Route
from mm2.copy.spec import BEGINNING, Assignment, CopyTaskSpec
from mm2.errors import KafkaClientError, ProducerFencedError, RecordTooLargeError
from tests.support.specs import CopySettingsFields, copy_settings, copy_spec


class FakePositions:
    connector = "MirrorSourceConnector"
    topic = "mm2-offsets.primary.internal"

    def __init__(self, calls: list[str]) -> None:
        self._calls = calls
        self.consumer_config: dict[str, str] = {}
        self.admin_config: dict[str, str] = {}
        self.producer_config: dict[str, str] = {}
        self.written: list[dict[tuple[str, int], int]] = []
        self.created = False

    def ensure(self) -> bool:
        self._calls.append("offsets topic")
        return self.created

    def source_cluster_id(self) -> str:
        return "c1"

    def read(
        self,
        timeout: float = 15.0,
        *,
        ensure: bool = True,
        only: Iterable[tuple[str, int]] | None = None,
        stable: bool = False,
    ) -> StoredPositions:
        """What a copy task run again reads (the runner here runs none)."""
        return StoredPositions()

    def write(
        self,
        positions: Mapping[tuple[str, int], int | None],
        *,
        cluster_id: str | None = None,
        topic_ids: Mapping[tuple[str, int], str] | None = None,
        leader_epochs: Mapping[tuple[str, int], int] | None = None,
        timeout: float = 30.0,
    ) -> None:
        self.written.append({tp: offset for tp, offset in positions.items() if offset is not None})
        self.written_epochs = dict(leader_epochs or {})
        self.written_ids = dict(topic_ids or {})


class FakeFeed:
    def __init__(self, calls: list[str], stored: dict[tuple[str, int], int]) -> None:
        self._calls = calls
        self.stored = StoredPositions()
        self.stored.offsets.update(stored)
        self.stored.cluster_ids.update(dict.fromkeys(stored, "c1"))
        self.stored.leader_epochs.update(dict.fromkeys(stored, 3))
        self.ready: dict[int, str] = {}

    def open(self) -> None:
        pass

    def read_to_end(self, routes: object, timeout: float) -> None:
        self._calls.append("settle")


class FakeSchedule:
    def __init__(self, routes: Callable[[], None]) -> None:
        self._refresh = routes
        self.routes = {"orders": Route("orders", "primary.orders", 2)}
        self.limits: dict[str, int] = {}

    def refresh_routes(self) -> None:
        self._refresh()

    def max_message_bytes(self, remotes: Iterable[str]) -> dict[str, int]:
        return {r: self.limits[r] for r in remotes if r in self.limits}


class FakeRunner:
    def __init__(self) -> None:
        self.started: list[Sequence[CopyTaskSpec]] = []
        self.failure: CopyFailure | None = None
        self.cancelled = 0

    @property
    def running(self) -> bool:
        return len(self.started) > self.cancelled and self.failure is None

    def start(self, specs: Sequence[CopyTaskSpec], positions: object) -> None:
        self.started.append(specs)

    def cancel(self, timeout: float = 5.0) -> None:
        self.cancelled = len(self.started)

    def take_failure(self) -> CopyFailure | None:
        failure, self.failure = self.failure, None
        return failure

    def free_slots(self) -> int:
        return 4


class FakePublisher:
    def publish(self, epoch: str, additions: Mapping[int, Sequence[Assignment]]) -> int:
        return 7

    def close(self) -> None:
        pass


class NoMetrics:
    def __init__(self) -> None:
        self.recreated: list[str] = []

    def set_owners(self, source: str, target: str, owners: Mapping[tuple[str, int], int]) -> None:
        pass

    def transactions_ended(self, source: str, target: str, partitions: Sequence[str]) -> None:
        pass

    def topic_recreated(self, source: str, target: str, topic: str) -> None:
        self.recreated.append(topic)


def _planner(
    calls: list[str],
    *,
    runner: Callable[[], Any] | None = None,
    fence: Callable[[list[str], float], None] | None = None,
    stored: dict[tuple[str, int], int] | None = None,
    prove: Any = None,
    created: bool = False,
    leader: LeaderEpoch | None = None,
    check_leader: Callable[[LeaderEpoch], None] = lambda _lead: None,
    end_left_open: EndLeftOpen | None = None,
    left_open: LeftOpenWatch | None = None,
    **settings: Unpack[CopySettingsFields],
) -> tuple[EpochPlanner, FakePositions]:
    fencing = threading.Event()

    def fence_ids(ids: list[str], timeout: float) -> None:
        try:
            if fence is None:
                calls.append(f"fence {len(ids)}")
            else:
                fence(ids, timeout)
        finally:
            fencing.set()

    def check(lead: LeaderEpoch) -> None:
        try:
            check_leader(lead)
        except ProducerFencedError:
            fencing.set()  # refused: the fencing is over, nothing fenced (routes need not wait)
            raise

    def routes() -> None:  # the fencing runs beside the topic sync, not after it
        calls.append("routes while fencing" if fencing.wait(10) else "routes")

    def make_runner() -> Any:
        calls.append("spark")
        return FakeRunner()

    positions = FakePositions(calls)
    positions.created = created
    fields: CopySettingsFields = {"tasks_max": 2, "source_consumer": {}, "target_producer": {}}
    fields.update(settings)
    copy = copy_settings(**fields)
    feed, schedule, metrics = FakeFeed(calls, stored or {}), FakeSchedule(routes), NoMetrics()
    parts = FlowParts(copy, positions, feed, schedule, metrics)
    fenced_by = Fencing(
        fence_ids,
        leader=lambda: leader,
        check_leader=check,
        end_left_open=end_left_open,
        left_open=left_open,
    )
    planner = EpochPlanner(
        parts,
        settle=Settle(
            parts,
            fencing=fenced_by,
            prove=prove,
        ),
        specs=TaskSpecs(
            parts,
            syncs_target=lambda: ("", None),
            is_heartbeats=lambda topic: topic == "beats",
            leader=lambda: leader,
        ),
        make_runner=runner or make_runner,
        publisher=LazyPublisher(FakePublisher),
    )
    return planner, positions


def test_the_first_settle_comes_before_waiting_for_spark() -> None:
    calls: list[str] = []
    planner, positions = _planner(calls, stored={("orders", 0): 41})
    planner.prepare()
    # the fencing runs in the background from the start, beside the offsets topic and routes
    assert calls.index("fence 2") < calls.index("settle")
    calls.remove("fence 2")
    assert calls == ["offsets topic", "routes while fencing", "settle", "spark"]
    assert planner.settled is True  # the first epoch starts on it without fencing again
    assert positions.written == [{("orders", 0): 41}]  # committed positions written again
    assert positions.written_epochs == {("orders", 0): 3}  # with their records' leader epochs


def test_a_retried_prepare_does_not_settle_twice() -> None:
    calls: list[str] = []
    attempts = iter([RuntimeError("JVM not up"), None])

    def runner() -> Any:
        calls.append("spark")
        failure = next(attempts)
        if failure is not None:
            raise failure
        return FakeRunner()

    planner, _ = _planner(calls, runner=runner)
    with pytest.raises(RuntimeError):
        planner.prepare()
    planner.prepare()
    assert calls.count("settle") == 1 and calls.count("fence 2") == 1
    assert calls[-1] == "spark"


def test_a_failed_early_fencing_fails_the_prepare_and_is_started_again_next_time() -> None:
    calls: list[str] = []
    outcomes = iter([KafkaClientError("fencing earlier copy tasks failed", retriable=True), None])

    def fence(ids: list[str], timeout: float) -> None:
        calls.append("fence")
        failure = next(outcomes)
        if failure is not None:
            raise failure

    planner, _ = _planner(calls, fence=fence)
    with pytest.raises(KafkaClientError, match="fencing earlier copy tasks"):
        planner.prepare()
    planner.prepare()
    assert calls.count("fence") == 2 and planner.settled


def test_the_first_epoch_starts_on_the_first_settle_with_the_stored_positions() -> None:
    calls: list[str] = []
    planner, _ = _planner(calls, stored={("orders", 0): 41})
    planner.run_epochs()
    runner = planner.runner
    assert isinstance(runner, FakeRunner) and len(runner.started) == 1
    specs = runner.started[0]
    assert [s.partitions for s in specs] == [
        [Assignment("orders", 0, "primary.orders", 42)],
        [Assignment("orders", 1, "primary.orders", -1)],
    ]
    assert [s.transactional_id for s in specs] == [
        "primary-mm2-MirrorSourceConnector-0",
        "primary-mm2-MirrorSourceConnector-1",
    ]
    assert specs[0].epoch and {s.epoch for s in specs} == {specs[0].epoch}  # one epoch's id
    assert calls.count("settle") == 1
    assert all(s.settings is planner.settings for s in specs)  # the flow's one value


def test_an_operators_failure_from_a_copy_task_fails_the_planner_with_its_class() -> None:
    calls: list[str] = []
    planner, _ = _planner(calls)
    planner.run_epochs()
    runner = planner.runner
    assert isinstance(runner, FakeRunner)
    runner.failure = CopyFailure("record-too-large", False, "record orders-0@5 is too large")
    with pytest.raises(RecordTooLargeError, match="orders-0@5"):
        planner.run_epochs()
    runner.failure = CopyFailure("kafka", True, "broker down")
    with pytest.raises(KafkaClientError, match=r"copy tasks failed \(kafka: broker down\)"):
        planner.run_epochs()


def test_with_schema_ids_the_policys_heartbeats_topics_are_copied_as_they_are() -> None:
    planner, _ = _planner([], schema_ids=True)
    assert planner._specs.assignment("beats", 0, "primary.beats").as_is
    assert not planner._specs.assignment("orders", 0, "primary.orders").as_is
    planner, _ = _planner([], schema_ids=False)
    beats = planner._specs.assignment("beats", 0, "primary.beats")
    assert not beats.as_is and beats.heartbeats  # nothing rewritten; still heartbeats
    assert not planner._specs.assignment("orders", 0, "primary.orders").heartbeats
    spec = copy_spec(settings=planner.settings, partitions=[Assignment("b", 0, "p.b", 1, "", True)])
    assert CopyTaskSpec.from_json(spec.to_json()) == spec


def test_copy_tasks_batch_within_the_smallest_remote_topic_limit_and_a_lower_one_restarts() -> None:
    calls: list[str] = []
    planner, _ = _planner(calls)
    schedule = planner._parts.schedule
    assert isinstance(schedule, FakeSchedule)
    schedule.limits = {"primary.orders": 512_000}
    planner.run_epochs()
    runner = planner.runner
    assert isinstance(runner, FakeRunner)
    (first, _second) = runner.started[0]
    assert first.topic_limits == {"primary.orders": 512_000}
    assert first.batch_bytes == 512_000
    assert planner._assignment_change(runner) == {}  # unchanged: the epoch runs on
    schedule.limits = {"primary.orders": 100_000}  # the config sync lowered it
    assert planner._assignment_change(runner) is None  # new producers: a new epoch


def test_a_topic_re_created_since_its_positions_were_stored_is_copied_from_its_start(
    caplog: pytest.LogCaptureFixture,
) -> None:
    calls: list[str] = []
    admin = {"bootstrap.servers": "primary:9092"}
    planner, positions = _planner(
        calls, stored={("orders", 0): 2999, ("orders", 1): 10}, source_admin=admin
    )
    schedule = planner._parts.schedule
    assert isinstance(schedule, FakeSchedule)
    schedule.routes = {"orders": Route("orders", "primary.orders", 2, topic_id="new")}
    planner._parts.feed.stored.topic_ids.update({("orders", 0): "old", ("orders", 1): "new"})
    with caplog.at_level(logging.WARNING):
        planner.run_epochs()
    runner = planner.runner
    assert isinstance(runner, FakeRunner)
    # the copy tasks ask the source for the topics' ids before each commit (mm2.copy.loop)
    assert [spec.settings.source_admin for spec in runner.started[0]] == [admin, admin]
    assignments = [a for spec in runner.started[0] for a in spec.partitions]
    # Partition 0's position is of the deleted topic: from the start, never after offset 2999;
    # partition 1's was written for the topic as it is now.
    assert sorted((a.partition, a.next_offset, a.topic_id) for a in assignments) == [
        (0, BEGINNING, "new"),
        (1, 11, "new"),
    ]
    assert "orders was deleted and created again" in caplog.text
    metrics = planner._parts.metrics
    assert isinstance(metrics, NoMetrics) and metrics.recreated == ["orders"]
    assert positions.written_ids == {("orders", 0): "old", ("orders", 1): "new"}  # kept
    # The running epoch learns of a re-creation between two refreshes: a new epoch.
    schedule.routes = {"orders": Route("orders", "primary.orders", 2, topic_id="newer")}
    assert planner._assignment_change(runner) is None


def test_copy_tasks_show_as_copying_only_once_they_said_so_in_the_running_epoch() -> None:
    calls: list[str] = []
    planner, _ = _planner(calls)
    (before,) = planner.copy_tasks()
    assert before.waiting is not None and "no copy epoch yet" in before.waiting
    planner.run_epochs()
    views = planner.copy_tasks()
    assert [(v.id, v.partitions) for v in views] == [(0, ("orders-0",)), (1, ("orders-1",))]
    assert all(v.waiting is not None and v.waiting.startswith("starting") for v in views), views
    runner, feed = planner.runner, planner._parts.feed
    assert isinstance(runner, FakeRunner) and isinstance(feed, FakeFeed)
    epoch = runner.started[0][0].epoch
    feed.ready = {0: epoch, 1: "an earlier epoch"}
    assert [v.waiting is None for v in planner.copy_tasks()] == [True, False]
    runner.failure = CopyFailure("error", True, "executor lost")
    assert all("between two copy epochs" in (v.waiting or "") for v in planner.copy_tasks())


def test_a_lost_offsets_topic_gets_the_positions_the_offset_syncs_prove(
    caplog: pytest.LogCaptureFixture,
) -> None:
    calls: list[str] = []
    attempts = iter([KafkaClientError("source did not answer", retriable=True), None])

    def prove(routes: Mapping[str, Route], whole_log: bool) -> Proof:
        calls.append("prove")
        failure = next(attempts)
        if failure is not None:
            raise failure
        assert set(routes) == {"orders"}
        assert whole_log  # a rebuild reads every offset sync, a settle only the topic's tail
        return Proof({("orders", 0): 5_000, ("orders", 1): 770}, {("orders", 0): 5_040})

    planner, positions = _planner(calls, prove=prove, created=True)
    with pytest.raises(KafkaClientError):
        planner.prepare()
    positions.created = False  # the topic exists by the next try: the rebuild is still due
    with caplog.at_level(logging.WARNING):
        planner.prepare()
    assert calls.count("prove") == 2
    # orders-0 proven; orders-1 not (its copies differ): from its latest sync, never later
    assert positions.written == [{("orders", 0): 5_040, ("orders", 1): 770}]
    assert "positions of 1 partition(s) rebuilt exactly" in caplog.text
    assert "1 more resume after their latest offset sync" in caplog.text
    assert calls[calls.index("prove", calls.index("prove") + 1) + 1] == "settle"  # read back


def test_an_offsets_topic_that_existed_is_not_rebuilt() -> None:
    calls: list[str] = []
    planner, positions = _planner(calls, prove=lambda routes, whole_log: calls.append("prove"))
    planner.prepare()
    assert "prove" not in calls and positions.written == []


def test_a_deposed_leaders_planner_fences_nothing_and_its_copy_tasks_carry_the_epoch() -> None:
    calls: list[str] = []
    current = LeaderEpoch("mm2-configs.internal", "e1")

    def check(lead: LeaderEpoch) -> None:
        calls.append(f"check {lead.epoch}")
        if lead.epoch != "e1":
            raise ProducerFencedError("leader epoch e0 is over")

    planner, _ = _planner(calls, leader=current, check_leader=check)
    planner.run_epochs()
    assert calls.index("check e1") < calls.index("fence 2")
    runner = planner.runner
    assert isinstance(runner, FakeRunner)
    (specs,) = runner.started
    assert {(s.leader_topic, s.leader_epoch) for s in specs} == {("mm2-configs.internal", "e1")}

    calls.clear()
    stale, _ = _planner(calls, leader=LeaderEpoch("mm2-configs.internal", "e0"), check_leader=check)
    with pytest.raises(ProducerFencedError):
        stale.prepare()
    assert not any(c.startswith("fence") for c in calls)


def test_copy_task_ids_of_a_run_with_a_larger_tasks_max_are_fenced_before_anything_starts() -> None:
    calls: list[str] = []
    planner, _ = _planner(calls)
    feed: Any = planner._parts.feed
    read = feed.read_to_end

    def read_notices(routes: object, timeout: float) -> None:
        read(routes, timeout)
        feed.ready.update({0: "e1", 1: "e1", 2: "e1", 3: "e1"})  # tasks.max was 4 then

    feed.read_to_end = read_notices
    planner.prepare()
    # fenced as 2 ids first; the notices name 4: all 4 fenced, the positions read again
    assert calls.count("fence 2") == 1 and calls.count("fence 4") == 1
    assert calls.index("fence 2") < calls.index("settle") < calls.index("fence 4")
    assert calls.count("settle") == 2 and calls.index("fence 4") < calls.index("spark")
    calls.clear()
    planner.run_epochs()
    assert "fence 4" not in calls  # settled: the first epoch starts without fencing again


def test_the_settle_writes_back_only_the_positions_of_routed_partitions() -> None:
    calls: list[str] = []
    # "retired" is not routed: its partition of the offsets topic need not be read to its end
    planner, positions = _planner(calls, stored={("orders", 0): 41, ("retired", 0): 7})
    planner.prepare()
    assert positions.written == [{("orders", 0): 41}]


def test_a_partition_held_open_while_copy_tasks_run_gets_a_new_epoch_that_ends_it() -> None:
    calls: list[str] = []
    now = [0.0]
    held = {("primary.orders", 1): 500}

    def end_left_open(ids: list[str], topics: list[str], timeout: float) -> dict[Any, int]:
        calls.append(f"end left open on {', '.join(topics)}")
        if now[0] == 0:  # the first settle: left open later, while the epoch runs
            return {}
        ended = dict(held)
        held.clear()
        return ended

    watch = LeftOpenWatch(
        lambda topics: dict(held), patience_s=90, every_s=30, clock=lambda: now[0]
    )
    planner, _ = _planner(calls, end_left_open=end_left_open, left_open=watch)
    planner.run_epochs()
    runner = planner.runner
    assert isinstance(runner, FakeRunner) and len(runner.started) == 1
    calls.clear()
    for t in (30, 60, 90):  # held, but not longer than a copy task's transaction can be open
        now[0] = t
        planner.run_epochs()
    assert calls == [] and len(runner.started) == 1
    now[0] = 120  # held at offset 500 since t=30, 90 s ago
    planner.run_epochs()
    assert runner.cancelled == 1 and len(runner.started) == 2  # a new epoch, on a settle ...
    assert calls[:3] == [
        "fence 2",
        "end left open on mm2-offsets.primary.internal, primary.orders",
        "settle",
    ]
    assert held == {}  # ... that ended it


def test_positions_aborted_with_a_transaction_left_open_move_up_to_what_is_committed() -> None:
    """A broker's stop committed a transaction's records on orders-0 but left the positions
    open; ended aborted, orders-0's stored position is older than what the remote topic holds:
    the proof from the offset syncs moves it up, never down (orders-1)."""
    calls: list[str] = []

    def end_left_open(ids: list[str], topics: list[str], timeout: float) -> dict[Any, int]:
        return {("mm2-offsets.primary.internal", 3): 70}

    def prove(routes: object, whole_log: bool) -> Proof:
        calls.append("prove")
        assert not whole_log  # a settle reads the offset syncs topic's tail
        return Proof({("orders", 0): 57, ("orders", 1): 29}, {("orders", 0): 58, ("orders", 1): 30})

    planner, positions = _planner(
        calls,
        stored={("orders", 0): 50, ("orders", 1): 40},
        prove=prove,
        end_left_open=end_left_open,
    )
    planner.prepare()
    assert calls.count("prove") == 1
    assert positions.written[0] == {("orders", 0): 58}  # moved up; orders-1 stays at 40


def test_positions_a_later_transactions_abort_took_move_up_even_with_nothing_left_open() -> None:
    """A broker's stop committed a transaction's records on orders-0 and dropped the marker of
    its position; back, the copy task's next transaction joined that position and the fencing
    aborted both. Nothing is held any more, yet the stored position is older than what the
    remote topic holds: the proof runs at every settle, and moves it up, never down."""
    calls: list[str] = []

    def prove(routes: object, whole_log: bool) -> Proof:
        calls.append("prove")
        return Proof({("orders", 0): 57, ("orders", 1): 29}, {("orders", 0): 58, ("orders", 1): 30})

    planner, positions = _planner(calls, stored={("orders", 0): 50, ("orders", 1): 40}, prove=prove)
    planner.prepare()
    assert calls.count("prove") == 1
    assert positions.written[0] == {("orders", 0): 58}  # moved up; orders-1 stays at 40


def test_a_stop_proves_nothing_when_nothing_was_left_open() -> None:
    """A stop's settle is short (a clean stop takes at most 10 s): the next start proves."""
    calls: list[str] = []
    runner = FakeRunner()

    def prove(routes: object, whole_log: bool) -> Proof:
        calls.append("prove")
        return Proof({}, {})

    planner, _ = _planner(calls, stored={("orders", 0): 50}, prove=prove, runner=lambda: runner)
    planner.prepare()
    planner.run_epochs()
    assert calls.count("prove") == 1  # the first settle's
    planner.end_epoch()
    assert runner.cancelled == 1 and calls.count("prove") == 1


def test_positions_ahead_of_what_is_committed_move_back_only_where_the_proof_is_whole() -> None:
    """A broker's stop committed a transaction's positions and dropped its records' marker;
    the fencing aborted the records. orders-0's remote partition holds nothing committed after
    the copy of offset 45 (the proof paired every record to its end): its position 50 moves
    back to 45 and records 46-50 are copied again. orders-1's proof ended on a record it could
    not pair: its position stays, never moved back on a guess."""
    calls: list[str] = []

    def prove(routes: object, whole_log: bool) -> Proof:
        calls.append("prove")
        return Proof(
            {("orders", 0): 40, ("orders", 1): 20},
            {("orders", 0): 45, ("orders", 1): 30},
            frozenset({("orders", 0)}),
        )

    planner, positions = _planner(calls, stored={("orders", 0): 50, ("orders", 1): 40}, prove=prove)
    planner.prepare()
    assert positions.written[0] == {("orders", 0): 45}


def test_a_position_set_over_rest_is_the_operators_and_is_not_moved() -> None:
    """An operator set orders-0 to 10 over REST (its record carries no leader epoch) to copy
    records again: the proof says more is committed, and the position stays at 10. orders-1,
    written by a copy task, moves up."""
    calls: list[str] = []

    def prove(routes: object, whole_log: bool) -> Proof:
        calls.append("prove")
        return Proof({}, {("orders", 0): 58, ("orders", 1): 58})

    planner, positions = _planner(calls, stored={("orders", 0): 10, ("orders", 1): 40}, prove=prove)
    planner._parts.feed.stored.leader_epochs.pop(("orders", 0))
    planner.prepare()
    assert calls.count("prove") == 1
    assert positions.written[0] == {("orders", 1): 58}
