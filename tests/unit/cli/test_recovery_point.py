"""The unplanned-failover report: per source partition, what the mirror copied of what it saw."""

from __future__ import annotations

from mm2.cli.offset_tools import render_recovery_point
from mm2.client.recovery import PartitionAtRisk


def test_records_at_risk_are_the_offsets_between_the_copy_and_the_end_seen() -> None:
    caught_up = PartitionAtRisk("orders", 0, 120, 120, 1_700_000_000_000)
    behind = PartitionAtRisk("orders", 1, 100, 130, 1_700_000_000_500)
    unknown = PartitionAtRisk("orders", 2, 7, None, None)  # an older mm2 wrote the position
    assert (caught_up.at_risk, behind.at_risk, unknown.at_risk) == (0, 30, None)
    assert behind.to_json() == {"topic": "orders", "partition": 1, "copied_to": 100,
                                "source_end": 130, "seen_at_ms": 1_700_000_000_500,
                                "at_risk_at_most": 30}  # fmt: skip
    text = render_recovery_point("primary->backup", [caught_up, behind, unknown])
    lines = text.splitlines()
    assert lines[0].startswith("recovery point of primary->backup")
    assert lines[4].split() == ["orders-1", "100", "130", "2023-11-14", "22:13:20.500", "30"]
    assert lines[5].split() == ["orders-2", "7", "-", "-", "-"]
    assert lines[-1] == "records not copied: at most 30 in 3 partition(s) (1 without an end seen)"
