"""Source positions in a flow's Spark checkpoint: read the committed ones, rewrite or reset them.

Spark's offset log keeps one file per micro-batch, `offsets/<id>` (`v1`, batch metadata, then one
JSON line per source: `{"topic": {"partition": next_offset}}`), and `commits/<id>` once the batch
is done. A restarted query resumes after the newest committed batch. Only touch the log while
the query is stopped (the connector is STOPPED).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from pathlib import Path

from mm2.pipeline.planning import from_offsets, to_offsets

__all__ = ["SparkOffsetLog"]

_VERSION = "v1"
_COMMIT_BODY = '{"nextBatchWatermarkMs":0}'


def _batch_ids(directory: Path) -> list[int]:
    if not directory.is_dir():
        return []
    return sorted(int(p.name) for p in directory.iterdir() if p.name.isdigit())


class SparkOffsetLog:
    """The offset log of one checkpoint directory (`<mm2.state.dir>/<src>_to_<tgt>/spark`)."""

    def __init__(self, checkpoint_dir: Path) -> None:
        self.checkpoint_dir = checkpoint_dir
        self._offsets = checkpoint_dir / "offsets"
        self._commits = checkpoint_dir / "commits"

    def _last_committed(self) -> int | None:
        committed = set(_batch_ids(self._commits))
        done = [b for b in _batch_ids(self._offsets) if b in committed]
        return done[-1] if done else None

    def committed(self) -> dict[tuple[str, int], int]:
        """(topic, partition) -> the next offset to copy, as of the newest committed batch."""
        batch = self._last_committed()
        if batch is None:
            return {}
        lines = (self._offsets / str(batch)).read_text(encoding="utf-8").splitlines()
        if len(lines) < 3 or lines[2].strip() in ("", "-"):
            return {}
        return from_offsets(json.loads(lines[2]))

    def write(self, positions: Mapping[tuple[str, int], int]) -> None:
        """Make `positions` the newest committed batch, so the next start copies from there."""
        batch = self._last_committed()
        for directory in (self._offsets, self._commits):  # drop batches planned, never committed
            for stale in _batch_ids(directory):
                if batch is None or stale > batch:
                    (directory / str(stale)).unlink()
                    (directory / f".{stale}.crc").unlink(missing_ok=True)
        metadata = '{"batchWatermarkMs":0,"batchTimestampMs":0,"conf":{}}'
        if batch is not None:
            metadata = (self._offsets / str(batch)).read_text(encoding="utf-8").splitlines()[1]
        new = 0 if batch is None else batch + 1
        self._offsets.mkdir(parents=True, exist_ok=True)
        self._commits.mkdir(parents=True, exist_ok=True)
        body = json.dumps(to_offsets(positions), separators=(",", ":"))
        self._write(self._offsets / str(new), f"{_VERSION}\n{metadata}\n{body}")
        self._write(self._commits / str(new), f"{_VERSION}\n{_COMMIT_BODY}")

    def reset(self) -> None:
        """Forget every position: the next start is a first start (auto.offset.reset applies)."""
        shutil.rmtree(self.checkpoint_dir, ignore_errors=True)

    @staticmethod
    def _write(path: Path, text: str) -> None:
        tmp = path.with_name(f".{path.name}.mm2tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
