"""A Spark executor's Python has mm2 and confluent-kafka only (docs/spark-cluster.md): the
modules a copy task runs must import with nothing else there."""

from __future__ import annotations

import pickle
import subprocess
import sys

from mm2.config import load_properties, parse_properties
from mm2.copy.positions import PositionsTopic

# Installed for the driver, absent on executors.
_DRIVER_ONLY = (
    "pydantic",
    "cryptography",
    "javaproperties",
    "yaml",
    "fastapi",
    "httpx",
    "psutil",
    "prometheus_client",
    "tqdm",
    "uvicorn",
)

_PROBE = f"""
import importlib.abc, sys
class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in {_DRIVER_ONLY!r}:
            raise ImportError(f"{{name}} is not on an executor")
        return None
sys.meta_path.insert(0, Refuse())
import mm2.copy.task, mm2.copy.runner, mm2.copy.positions
import pickle
topic = pickle.loads(bytes.fromhex(sys.stdin.read()))  # what Spark hands a copy task
print("imported", topic.topic)
"""


def test_a_copy_task_imports_and_unpickles_without_the_drivers_dependencies() -> None:
    text = """clusters = a, b
a.bootstrap.servers = a:9092
b.bootstrap.servers = b:9092
a->b.enabled = true
"""
    flow = load_properties(parse_properties(text, "mm2.properties")).flow("a", "b")
    positions = PositionsTopic.of(flow)
    assert getattr(positions.admin_config, "alias", None) == "b"  # named in driver-side errors
    done = subprocess.run(
        [sys.executable, "-c", _PROBE],
        input=pickle.dumps(positions).hex(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "imported mm2-offsets.a.internal"
