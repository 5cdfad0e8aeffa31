"""`make demo` reports success only when each topic got exactly this run's records."""

from __future__ import annotations

from pathlib import Path

from mm2.cli.demo import _MirrorProgress, _verdict


def test_success_only_when_every_topic_got_exactly_this_runs_records() -> None:
    assert _verdict({"a": 300, "b": 300}, 300) is None
    assert _verdict({"a": 300, "b": 299}, 300) == "not every record arrived (1 of b missing)"
    assert _verdict({"a": 0, "b": 600}, 300) == "not every record arrived (300 of a missing)"
    assert _verdict({"a": 302, "b": 300}, 300) == "records arrived more than once (2 of a)"


def test_the_demo_shows_the_mirrors_start_up_as_it_comes(tmp_path: Path) -> None:
    log = tmp_path / "mirror.log"
    log.write_text(
        "2026-11-23 22:01:41,415 INFO mm2.pipeline.session: starting Spark (local[16]) ...\n"
        "2026-11-23 22:01:42,206 INFO mm2.kafka.config_topic: now leader of backup's flows\n"
    )
    shown: list[str] = []
    progress = _MirrorProgress(log)
    progress.show(shown.append)
    with log.open("a") as more:
        more.write(
            "2026-11-23 22:01:59,824 INFO mm2.pipeline.session: Spark 4.3.0 ready in 18.4 s\n"
            "2026-11-23 22:02:03,413 INFO mm2.pipeline.copy_job: primary->backup task 0: "
            "copying orders-1 (ready in 0.0 s)\n"
        )
    progress.show(shown.append)
    assert shown == [
        "  mirror: starting Spark (local[16]) ...",
        "  mirror: Spark 4.3.0 ready in 18.4 s",
        "  mirror: primary->backup task 0: copying orders-1 (ready in 0.0 s)",
    ]
