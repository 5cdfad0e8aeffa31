"""A Spark executor's Python has mm2 and confluent-kafka only (README, "Running on a Spark
cluster"): the modules a copy task runs must import with nothing else there."""

from __future__ import annotations

import subprocess
import sys

# Installed for the driver, absent on executors.
_DRIVER_ONLY = ("pydantic", "cryptography", "javaproperties", "yaml", "fastapi", "httpx",
                "psutil", "prometheus_client", "tqdm", "uvicorn")  # fmt: skip

_PROBE = f"""
import importlib.abc, sys
class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in {_DRIVER_ONLY!r}:
            raise ImportError(f"{{name}} is not on an executor")
        return None
sys.meta_path.insert(0, Refuse())
import mm2.copy.task, mm2.copy.runner, mm2.copy.positions
print("imported")
"""


def test_the_copy_task_imports_without_the_drivers_dependencies() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "imported"
