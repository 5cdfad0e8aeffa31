"""The lag read from Kafka tells the truth about positions that are not the log's: one stored for
a topic since deleted and created again, and one beyond the log end (Kafka answers replaced by
fakes of the three reads: topics and their ids, end offsets, the offsets topic)."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping

import pytest

from mm2.client import lag
from mm2.config import load_properties, parse_properties
from mm2.copy.position_record import PositionRecord
from mm2.errors import KafkaClientError

PROPERTIES = """
clusters = a, b
a.bootstrap.servers = a:9092
b.bootstrap.servers = b:9092
a->b.enabled = true
a->b.topics = orders
"""
TP = tuple[str, int]


IDS = {"orders": "new-id"}  # the topic as it is now


class FakeAdmin:
    def __init__(self, *_: object, **__: object) -> None: ...

    def list_topics(self) -> dict[str, int]:
        return {"orders": 2}

    def topic_ids(self, topics: Iterable[str]) -> dict[str, str]:
        return {t: IDS[t] for t in topics}


class FakeLister:
    ends: Mapping[TP, int] = {}

    def __init__(self, *_: object, **__: object) -> None: ...

    def offsets(
        self, partitions: Iterable[TP], *, latest: bool, read_committed: bool
    ) -> dict[TP, int]:
        return {tp: self.ends[tp] if latest else 0 for tp in partitions}


class FakeReader:
    def __init__(self, records: list[PositionRecord]) -> None:
        self.records = records

    def read_to_end(self, timeout: float) -> list[PositionRecord]:
        out, self.records = self.records, []
        return out

    def close(self) -> None: ...


class FakeProbe:
    def __init__(self, *_: object, **__: object) -> None: ...

    def timestamps(self, offsets: Mapping[TP, int], timeout: float) -> dict[TP, int]:
        return {tp: 0 for tp in offsets}

    def close(self) -> None: ...


def reader(
    monkeypatch: pytest.MonkeyPatch, ends: Mapping[TP, int], stored: list[PositionRecord]
) -> lag.LagReader:
    monkeypatch.setattr(lag, "TopicAdmin", FakeAdmin)
    monkeypatch.setattr(FakeLister, "ends", ends)
    monkeypatch.setattr(lag, "OffsetLister", FakeLister)
    monkeypatch.setattr(lag, "TimestampProbe", FakeProbe)
    flow = load_properties(parse_properties(PROPERTIES, "mm2.properties")).flow("a", "b")
    out = lag.LagReader(flow)
    monkeypatch.setattr(out, "_tail", FakeReader(stored))
    return out


def position(partition: int, offset: int, topic_id: str | None) -> PositionRecord:
    return PositionRecord("orders", partition, offset, "cluster-a", None, topic_id)


def test_a_position_of_a_topic_created_again_counts_as_never_copied(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Stored at offset 2999 of the old topic; the new one holds 6,000 records from offset 0.
    ends = {("orders", 0): 6000, ("orders", 1): 10}
    stored = [position(0, 2999, "old-id"), position(1, 9, "new-id")]
    report = reader(monkeypatch, ends, stored).read()
    rows = {p.partition: p for p in report.partitions}
    assert rows[0].position is None and rows[0].records == 6000, rows[0]
    assert rows[1].position == 10 and rows[1].records == 0, rows[1]
    assert report.problems == (), report.problems


def test_a_position_beyond_the_log_end_is_a_problem_not_lag_0(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ends = {("orders", 0): 100, ("orders", 1): 10}
    stored = [position(0, 499, "new-id"), position(1, 9, None)]
    report = reader(monkeypatch, ends, stored).read()
    assert len(report.problems) == 1, report.problems
    assert "orders-0: the position 500 is beyond the source's log end 100" in report.problems[0]


class FlakyReader(FakeReader):
    """A positions consumer that fails its reads while `Location.down` says so."""

    def __init__(self, location: Location) -> None:
        super().__init__([])
        self.location = location
        self.closed = False

    def read_to_end(self, timeout: float) -> list[PositionRecord]:
        if self.location.down:
            raise KafkaClientError("target b: all brokers down", retriable=True)
        return super().read_to_end(timeout)

    def close(self) -> None:
        self.closed = True


class Location:
    """The offsets topic: counts the positions consumers the lag reader builds."""

    topic = "mm2-offsets.a.internal"

    def __init__(self) -> None:
        self.down = False
        self.built: list[FlakyReader] = []

    def reader(self) -> FlakyReader:
        self.built.append(FlakyReader(self))
        return self.built[-1]


def test_a_positions_consumer_is_replaced_after_three_failed_reads_in_a_row(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ends = {("orders", 0): 10, ("orders", 1): 10}
    out = reader(monkeypatch, ends, [])
    location = Location()
    monkeypatch.setattr(out, "_tail", None)
    monkeypatch.setattr(out, "_location", location)

    def read(times: int, *, down: bool) -> None:
        location.down = down
        for _ in range(times):
            failed = any("positions not read" in p for p in out.read().problems)
            assert failed == down

    read(7, down=True)  # 1-3 on the first consumer, 4-6 on a second, 7 on a third
    assert len(location.built) == 3
    assert [r.closed for r in location.built] == [True, True, False]
    read(1, down=False)  # the third reads: no new consumer
    read(2, down=True)
    read(1, down=False)  # the count starts again after a read that worked
    read(2, down=True)
    assert len(location.built) == 3 and not location.built[-1].closed
    read(1, down=True)  # the third failure in a row since the last read that worked
    assert location.built[-1].closed
    read(1, down=False)
    assert len(location.built) == 4


class StampProbe:
    """Every record was written 60 s ago; records which partitions were asked."""

    def __init__(self) -> None:
        self.asked: list[set[TP]] = []

    def timestamps(self, offsets: Mapping[TP, int], timeout: float) -> dict[TP, int]:
        self.asked.append(set(offsets))
        return dict.fromkeys(offsets, int(time.time() * 1000) - 60_000)

    def close(self) -> None: ...


def test_every_lagging_partition_gets_an_age_not_only_the_most_lagging(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    read = reader(monkeypatch, {}, [])
    probe = StampProbe()
    monkeypatch.setattr(read, "_stamps", probe)
    monkeypatch.setattr(lag, "_AGE_PARTITIONS", 2)
    rows: list[tuple[TP, int | None, int]] = [
        (("orders", p), 0, records) for p, records in enumerate([50, 40, 30, 20, 10])
    ]
    first = read._ages(rows, {})
    assert probe.asked == [{("orders", 0), ("orders", 1), ("orders", 2), ("orders", 3)}]
    assert set(first) == {("orders", p) for p in range(4)}  # orders-4 waits its turn
    second = read._ages(rows, {})
    assert probe.asked[1:] == [{("orders", 4)}]  # the others kept: nothing was copied since
    assert set(second) == {("orders", p) for p in range(5)}
    assert all(seconds >= 59 for seconds in second.values())


class TwoEnds(FakeLister):
    """The source with a transaction open in orders-0: its last stable offset is below its
    high watermark."""

    def offsets(
        self, partitions: Iterable[TP], *, latest: bool, read_committed: bool
    ) -> dict[TP, int]:
        out = super().offsets(partitions, latest=latest, read_committed=read_committed)
        if latest and not read_committed:
            out[("orders", 0)] += 5
        return out


class Writer:
    def __init__(self) -> None:
        self.written: list[tuple[int, dict[TP, int]]] = []

    def write(self, read_at_ms: int, ends: Mapping[TP, int]) -> bool:
        self.written.append((read_at_ms, dict(ends)))
        return True

    def close(self) -> None: ...


def test_the_mirrors_reader_records_the_high_watermarks_with_the_time_it_asked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ends = {("orders", 0): 100, ("orders", 1): 10}
    plain = reader(monkeypatch, ends, [])
    assert plain._ends_writer is None  # `mm2 status` and the switchover's drain write nothing
    monkeypatch.setattr(lag, "OffsetLister", TwoEnds)
    flow = plain.flow
    out = lag.LagReader(flow, record_ends=True)
    monkeypatch.setattr(out, "_tail", FakeReader([]))
    writer = Writer()
    monkeypatch.setattr(out, "_ends_writer", writer)
    before = int(time.time() * 1000)
    report = out.read()
    after = int(time.time() * 1000)
    assert {p.partition: p.log_end for p in report.partitions} == {0: 100, 1: 10}  # lag: LSO
    ((read_at, recorded),) = writer.written
    assert recorded == {("orders", 0): 105, ("orders", 1): 10}
    assert before <= read_at <= after
