"""The route file: which source topics the control plane has made ready, and their target names.

The control plane (in the worker process) writes it; Spark's planner, which runs in a process of
its own, reads it at every micro-batch. A topic is listed only once its remote topic exists on the
target, so the pipeline never produces to a topic that is not there yet.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Route", "read_routes", "write_routes"]


@dataclass(frozen=True)
class Route:
    """Source topic -> remote topic on the target, with the partitions both sides have."""

    topic: str
    target_topic: str
    partitions: int


def write_routes(path: Path, routes: Mapping[str, Route]) -> None:
    """Replace the route file atomically (readers never see half a file)."""
    body = {
        "routes": {
            r.topic: {"target": r.target_topic, "partitions": r.partitions}
            for r in sorted(routes.values(), key=lambda r: r.topic)
        }
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(body, indent=1), encoding="utf-8")
    tmp.replace(path)


def read_routes(path: Path) -> dict[str, Route]:
    """The routes last written; none while the control plane has not written any."""
    try:
        body = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    return {
        topic: Route(topic, str(r["target"]), int(r["partitions"]))
        for topic, r in body.get("routes", {}).items()
    }
