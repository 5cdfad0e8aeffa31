"""mm2: Kafka MirrorMaker 2 rebuilt in Python, with its data pipeline on Apache Spark."""

__version__ = "0.1.0"

__all__ = ["__version__"]
