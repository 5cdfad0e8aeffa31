"""mm2's logging: one format for Python, librdkafka, Spark and the JVM, repeats collapsed."""

from mm2.log.collapse import RepeatFilter
from mm2.log.setup import LOG_FORMAT, LogConfigError, configure, load_config

__all__ = ["LOG_FORMAT", "LogConfigError", "RepeatFilter", "configure", "load_config"]
