"""`--version` of both commands: mm2's version and those of the parts that decide behaviour."""

from __future__ import annotations

import platform
from importlib import metadata

__all__ = ["version_text"]


def _installed(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "not installed"


def version_text(prog: str) -> str:
    """`prog 0.1.0 (confluent-kafka 2.16.1, pyspark 4.3.0, Python 3.11.7)`, read from the
    installed packages' metadata (nothing heavy is imported)."""
    parts = ", ".join(f"{d} {_installed(d)}" for d in ("confluent-kafka", "pyspark"))
    return f"{prog} {_installed('mm2')} ({parts}, Python {platform.python_version()})"
