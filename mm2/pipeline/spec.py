"""What one flow's pipeline needs to know, as a JSON string Spark can hand to any process."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

__all__ = ["PipelineSpec"]


@dataclass(frozen=True)
class PipelineSpec:
    """Clients, routes and limits of one flow's copy pipeline (librdkafka settings)."""

    flow: str
    source_consumer: dict[str, str] = field(default_factory=dict)
    source_admin: dict[str, str] = field(default_factory=dict)
    target_producer: dict[str, str] = field(default_factory=dict)
    routes_path: str = ""
    tasks_max: int = 1
    # Spark's default parallelism (task slots); 0 when unknown.
    slots: int = 0
    max_records_per_partition: int = 200_000
    from_latest: bool = False
    read_committed: bool = False
    skip_oversized: bool = False

    @property
    def routes_file(self) -> Path:
        return Path(self.routes_path)

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> PipelineSpec:
        return cls(**json.loads(text))
