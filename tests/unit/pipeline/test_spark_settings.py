"""mm2.pipeline.session.spark_settings: mm2's Spark defaults under the operator's settings."""

from __future__ import annotations

from mm2.pipeline.session import spark_settings


def _options(conf: dict[str, str]) -> list[str]:
    return spark_settings(conf)["spark.driver.extraJavaOptions"].split()


def test_the_driver_jvm_runs_c1_only_and_logs_through_mm2() -> None:
    options = _options({})
    assert "-XX:TieredStopAtLevel=1" in options
    assert any(o.startswith("-Dlog4j2.configurationFile=") for o in options)


def test_the_operators_java_options_are_kept_and_their_jit_choice_wins() -> None:
    options = _options({"spark.driver.extraJavaOptions": "-Xmx2g -XX:-TieredCompilation"})
    assert options[:2] == ["-Xmx2g", "-XX:-TieredCompilation"]
    assert "-XX:TieredStopAtLevel=1" not in options
    assert "-XX:TieredStopAtLevel=1" in _options({"spark.driver.extraJavaOptions": "-Xmx2g"})


def test_the_operators_settings_win_over_mm2s_defaults() -> None:
    settings = spark_settings({"spark.master": "spark://h:7077", "spark.ui.enabled": "true"})
    assert settings["spark.master"] == "spark://h:7077"
    assert settings["spark.ui.enabled"] == "true"
    assert spark_settings({})["spark.python.daemon.module"] == "mm2.pipeline.daemon"
