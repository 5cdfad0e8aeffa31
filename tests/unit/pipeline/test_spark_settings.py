"""mm2.pipeline.session.spark_settings: mm2's Spark defaults under the operator's settings."""

from __future__ import annotations

from mm2.pipeline.session import spark_settings


def _options(conf: dict[str, str]) -> list[str]:
    return spark_settings(conf)["spark.driver.extraJavaOptions"].split()


def test_the_driver_jvm_logs_through_mm2_and_keeps_the_operators_java_options() -> None:
    assert any(o.startswith("-Dlog4j2.configurationFile=") for o in _options({}))
    options = _options({"spark.driver.extraJavaOptions": "-Xmx2g -XX:TieredStopAtLevel=1"})
    assert options[:2] == ["-Xmx2g", "-XX:TieredStopAtLevel=1"]
    assert any(o.startswith("-Dlog4j2.configurationFile=") for o in options)
    # An operator's own log4j configuration is left alone.
    own = _options({"spark.driver.extraJavaOptions": "-Dlog4j2.configurationFile=/etc/l.xml"})
    assert own == ["-Dlog4j2.configurationFile=/etc/l.xml"]


def test_the_operators_settings_win_over_mm2s_defaults() -> None:
    settings = spark_settings({"spark.master": "spark://h:7077", "spark.ui.enabled": "true"})
    assert settings["spark.master"] == "spark://h:7077"
    assert settings["spark.ui.enabled"] == "true"
    assert spark_settings({})["spark.python.daemon.module"] == "mm2.pipeline.daemon"
