"""mm2.log: one format, repeats collapsed with a count, child processes' lines relogged,
--log-config in Python's three formats, --log-file, and librdkafka's lines naming the cluster."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from mm2.kafka.failure import ClientLog, ClientWatch
from mm2.log import LogConfigError, RepeatFilter, configure
from mm2.log.collapse import cause_of
from mm2.log.setup import Py4JRootFilter
from mm2.log.wire import RAW_LOGGER, WireFormatter, parse, pump, relog
from tests.support.logs import logging_restored


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def restore_logging() -> Iterator[None]:
    """configure() changes the process's logging: put it back after the test."""
    with logging_restored():
        yield


@pytest.fixture(autouse=True)
def _forget_capture_loggers() -> Iterator[None]:
    """pytest adds its capture handlers to loggers that do not propagate: take the test's
    loggers down again, or a later configure() would find those handlers through them."""
    yield
    for name, logger in list(logging.Logger.manager.loggerDict.items()):
        if name.startswith("test.collapse.") and isinstance(logger, logging.Logger):
            for handler in list(logger.handlers):
                logger.removeHandler(handler)
            logger.propagate = True


def _capture(interval: float = 60.0) -> tuple[logging.Logger, io.StringIO, RepeatFilter, Clock]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    clock = Clock()
    repeats = RepeatFilter(interval, clock=clock)
    repeats._handler = handler
    handler.addFilter(repeats)
    logger = logging.getLogger(f"test.collapse.{id(stream)}")
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    logger.addHandler(handler)
    return logger, stream, repeats, clock


def test_repeats_of_a_cause_become_one_line_per_interval_with_a_count() -> None:
    log, stream, repeats, clock = _capture(60.0)
    for _second in range(150):  # 25 errors a second for 150 s, as an unreachable cluster makes
        for attempt in range(25):
            log.error("primary (kafka:9092): Connect failed after %d ms", attempt)
        clock.now += 1
        repeats.flush()
    lines = stream.getvalue().splitlines()
    assert len(lines) == 3  # the first at once, then one per ended interval
    assert lines[0] == "ERROR primary (kafka:9092): Connect failed after 0 ms"
    assert lines[1].endswith("(1499 more like this in the last 60 s)")
    assert lines[2].endswith("(1500 more like this in the last 60 s)")
    repeats.flush(force=True)  # the held repeats of the last, unfinished interval
    assert stream.getvalue().splitlines()[-1].endswith("(750 more like this in the last 30 s)")


def test_a_cause_that_stops_is_counted_once_and_then_forgotten() -> None:
    log, stream, repeats, clock = _capture(60.0)
    log.warning("leader of orders-0 not available")
    log.warning("leader of orders-0 not available")
    clock.now += 61
    repeats.flush()
    clock.now += 61
    repeats.flush()
    log.warning("leader of orders-0 not available")  # a new episode: shown at once
    assert stream.getvalue().splitlines() == [
        "WARNING leader of orders-0 not available",
        "WARNING leader of orders-0 not available (1 more like this in the last 61 s)",
        "WARNING leader of orders-0 not available",
    ]


def test_different_causes_brokers_and_levels_are_not_merged_but_info_is_never_held() -> None:
    log, stream, _repeats, _clock = _capture()
    log.error("Connect to 10.0.0.1:9092 failed")
    log.error("Connect to 10.0.0.2:9092 failed")  # another broker: another cause
    log.warning("Connect to 10.0.0.1:9092 failed")  # another level
    log.error("Connect to 10.0.0.1:9092 failed")  # a repeat: held
    for _ in range(3):
        log.info("copied 10 records")  # below WARNING: always written
    assert len(stream.getvalue().splitlines()) == 6


def test_the_cause_ignores_counts_and_durations_but_keeps_addresses() -> None:
    def cause(message: str) -> str:
        return cause_of(logging.makeLogRecord({"msg": message, "levelno": 40}))[2]

    assert cause("task 1 failed (attempt 3), retrying in 8.5 s") == cause(
        "task 2 failed (attempt 4), retrying in 16 s"
    )
    assert cause("Connect to ipv4#127.0.0.1:9092 failed") != cause(
        "Connect to ipv4#127.0.0.1:9093 failed"
    )


def test_librdkafka_lines_name_the_cluster_and_collapse_across_clients() -> None:
    log, stream, repeats, _clock = _capture()
    text = "[thrd:b:9092/bootstrap]: b:9092/bootstrap: Connect to ipv4#127.0.0.1:9092 failed: "
    for client in ("rdkafka#producer-1", "rdkafka#consumer-2", "rdkafka#producer-3"):
        for ms in (0, 1, 5):
            reason = f"Connection refused (after {ms}ms in state CONNECT)"
            # confluent-kafka calls the logger with Python's level (40 for librdkafka's 3)
            ClientLog("backup (b:9092)", log).log(40, "%s [%s] %s", "FAIL", client, text + reason)
    assert stream.getvalue().splitlines() == [
        "ERROR backup (b:9092): b:9092/bootstrap: Connect to ipv4#127.0.0.1:9092 failed: "
        "Connection refused (after 0ms in state CONNECT) [FAIL, client rdkafka#producer-1]"
    ]
    repeats.flush(force=True)
    assert "(8 more like this" in stream.getvalue()


def test_a_fenced_transactional_producer_is_information_not_a_critical_error() -> None:
    log, stream, _repeats, _clock = _capture()
    log.setLevel(logging.INFO)
    client = "primary->backup|MirrorSourceConnector-0"
    fenced = "Fatal error: Local: This instance has been fenced by a newer instance"
    ClientLog("backup (b:9092)", log).log(50, "%s [%s] %s", "FATAL", client, fenced)
    ClientLog("backup (b:9092)", log).log(50, "%s [%s] %s", "FATAL", client, "Fatal error: other")
    assert [ln.split()[0] for ln in stream.getvalue().splitlines()] == ["INFO", "CRITICAL"]


def test_every_client_made_through_client_watch_logs_through_python_naming_its_cluster() -> None:
    settings = ClientWatch({"bootstrap.servers": "k1:9092,k2:9092"}, alias="primary").settings()
    logger = settings["logger"]
    assert isinstance(logger, ClientLog)
    assert logger.cluster == "primary (k1:9092,k2:9092)"


def test_wire_lines_of_a_child_are_logged_again_with_their_name_level_time_and_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    try:
        raise ValueError("broken")
    except ValueError:
        record = logging.getLogger("mm2.copy.loop").makeRecord(
            "mm2.copy.loop",
            logging.ERROR,
            "f",
            1,
            "task %d failed",
            (3,),
            __import__("sys").exc_info(),
        )
    record.created = 1_700_000_000.25
    line = WireFormatter().format(record)
    assert "\n" not in line and parse(line) is not None
    caplog.set_level(logging.DEBUG)
    relog(line + "\n")
    (got,) = caplog.records
    assert (got.name, got.levelno, got.created) == ("mm2.copy.loop", 40, 1700000000.25)
    assert got.getMessage().startswith("task 3 failed\nTraceback")
    assert "ValueError: broken" in got.getMessage()


def test_log4j_wire_lines_and_raw_output_of_the_jvm(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.DEBUG, logger="spark")  # quiet by default (mm2.log.setup)
    log4j = {
        "mm2log": 1,
        "ms": 1700000000123,
        "level": "WARN",
        "name": "spark.Executor",
        "msg": "Exception in task 0.0",
        "exc": "",
    }
    pump(
        [
            (json.dumps(log4j) + "\n").encode(),
            b"WARNING: Using incubator modules: jdk.incubator.vector\n",
            b"\n",
        ]
    )
    spark, raw = caplog.records
    assert (spark.name, spark.levelno, spark.getMessage()) == (
        "spark.Executor",
        logging.WARNING,
        "Exception in task 0.0",
    )
    assert (raw.name, raw.levelno) == (RAW_LOGGER, logging.WARNING)


def test_spark_is_quiet_by_default_and_a_config_file_can_turn_it_up(
    restore_logging: None, tmp_path: Path
) -> None:
    configure(level=logging.INFO)
    assert not logging.getLogger("spark.Executor").isEnabledFor(logging.WARNING)
    assert not logging.getLogger(RAW_LOGGER).isEnabledFor(logging.WARNING)
    # httpx's line per request stays out of `mm2 status --url`'s table and a standby's log
    assert not logging.getLogger("httpx").isEnabledFor(logging.INFO)
    assert logging.getLogger("httpx").isEnabledFor(logging.WARNING)
    config = tmp_path / "logging.json"
    config.write_text(json.dumps({"version": 1, "loggers": {"spark": {"level": "INFO"}}}))
    configure(level=logging.INFO, log_config=config)
    assert logging.getLogger("spark.Executor").isEnabledFor(logging.INFO)


@pytest.mark.parametrize("suffix", [".json", ".yaml", ".ini"])
def test_log_config_in_each_of_pythons_formats(
    restore_logging: None, tmp_path: Path, suffix: str
) -> None:
    out = tmp_path / "mirror.log"
    existing = logging.getLogger("mm2.already.made")  # as mm2's modules make theirs at import
    dict_config = {
        "version": 1,
        "formatters": {"plain": {"format": "%(levelname)s|%(name)s|%(message)s"}},
        "handlers": {
            "file": {"class": "logging.FileHandler", "filename": str(out), "formatter": "plain"}
        },
        "root": {"level": "INFO", "handlers": ["file"]},
    }
    config = tmp_path / f"logging{suffix}"
    if suffix == ".json":
        config.write_text(json.dumps(dict_config))
    elif suffix == ".yaml":
        import yaml

        config.write_text(yaml.safe_dump(dict_config))
    else:
        config.write_text(
            "[loggers]\nkeys=root\n[handlers]\nkeys=file\n[formatters]\nkeys=plain\n"
            "[logger_root]\nlevel=INFO\nhandlers=file\n"
            f"[handler_file]\nclass=FileHandler\nformatter=plain\nargs=({str(out)!r},)\n"
            "[formatter_plain]\nformat=%(levelname)s|%(name)s|%(message)s\n"
        )
    configure(level=logging.INFO, log_config=config)
    for _ in range(3):
        existing.error("cluster backup (b:9092) unreachable")
    for handler in logging.getLogger().handlers:
        handler.flush()
    assert out.read_text().splitlines() == [
        "ERROR|mm2.already.made|cluster backup (b:9092) unreachable"
    ]


def test_a_broken_log_config_is_a_config_error_naming_the_file(
    restore_logging: None, tmp_path: Path
) -> None:
    broken = tmp_path / "logging.yaml"
    broken.write_text("handlers: [unclosed\n")
    with pytest.raises(LogConfigError, match=r"logging\.yaml"):
        configure(log_config=broken)
    with pytest.raises(LogConfigError, match="no such file"):
        configure(log_config=tmp_path / "missing.ini")
    wrong = tmp_path / "logging.json"
    wrong.write_text('{"version": 1, "handlers": {"h": {"class": "no.such.Handler"}}}')
    with pytest.raises(LogConfigError, match=r"logging\.json"):
        configure(log_config=wrong)


def test_log_file_gets_every_line_in_the_one_format(restore_logging: None, tmp_path: Path) -> None:
    out = tmp_path / "mm2.log"
    configure(level=logging.INFO, log_file=out)
    logging.getLogger("mm2.test").info("hello %s", "file")
    relog(
        json.dumps(
            {"mm2log": 1, "ms": 0, "level": "ERROR", "name": "spark.Executor", "msg": "boom"}
        )
    )
    for handler in logging.getLogger().handlers:
        handler.flush()
    lines = out.read_text().splitlines()
    assert lines[0].endswith(" INFO mm2.test: hello file")
    assert lines[1].endswith(" ERROR spark.Executor: boom")


def test_py4j_gateway_chatter_on_the_root_logger_is_judged_as_py4j() -> None:
    record = logging.makeLogRecord(
        {"name": "root", "levelno": logging.INFO, "pathname": "/x/py4j/java_gateway.py"}
    )
    mine = logging.makeLogRecord({"name": "root", "levelno": 20, "pathname": "/x/mm2/a.py"})
    logging.getLogger("py4j").setLevel(logging.CRITICAL)
    assert not Py4JRootFilter().filter(record)
    assert Py4JRootFilter().filter(mine)


def test_a_closed_handler_gets_no_summaries(capsys: pytest.CaptureFixture[str]) -> None:
    log, stream, repeats, _clock = _capture()
    log.error("boom")
    log.error("boom")
    stream.close()
    repeats.flush(force=True)  # no "--- Logging error ---" on stderr
    assert "Logging error" not in capsys.readouterr().err


def test_the_config_files_root_level_stands_unless_debug(
    restore_logging: None, tmp_path: Path
) -> None:
    config = tmp_path / "logging.json"
    config.write_text(json.dumps({"version": 1, "root": {"level": "WARNING"}}))
    configure(level=logging.INFO, log_config=config)
    assert logging.getLogger().level == logging.WARNING
    configure(level=logging.DEBUG, log_config=config)
    assert logging.getLogger().level == logging.DEBUG


def test_warnings_and_uncaught_thread_exceptions_are_log_records(
    restore_logging: None, tmp_path: Path
) -> None:
    import threading
    import warnings

    out = tmp_path / "mm2.log"
    configure(level=logging.INFO, log_file=out)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            warnings.warn("an old setting", DeprecationWarning, stacklevel=1)

        def boom() -> None:
            raise RuntimeError("worker broke")

        thread = threading.Thread(target=boom, name="copy-epoch-7")
        thread.start()
        thread.join()
    finally:
        for handler in logging.getLogger().handlers:
            handler.flush()
    text = out.read_text()
    assert " WARNING py.warnings: " in text and "an old setting" in text
    assert " ERROR mm2: uncaught exception in copy-epoch-7\nTraceback" in text
    assert "RuntimeError: worker broke" in text


def test_a_stopping_mirror_logs_sparks_records_at_debug_but_its_own_as_they_are(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    import mm2.log.wire as wire

    monkeypatch.setattr(wire, "_STOPPING", threading.Event())
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.DEBUG, logger="spark")

    def line(name: str) -> str:
        return json.dumps({"mm2log": 1, "ms": 0, "level": "ERROR", "name": name, "msg": "x"})

    relog(line("spark.TaskContextImpl"))
    wire.demote_spark_records()
    relog(line("spark.TaskContextImpl"))
    relog(line("mm2.copy.loop"))
    relog("Exception in thread main\n")
    got = [(r.name, r.levelno) for r in caplog.records]
    assert got == [
        ("spark.TaskContextImpl", logging.ERROR),
        ("spark.TaskContextImpl", logging.DEBUG),
        ("mm2.copy.loop", logging.ERROR),
        (RAW_LOGGER, logging.DEBUG),
    ]
