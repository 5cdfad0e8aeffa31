"""The copy step, run by mapInArrow in Spark's Python workers: units in, per-unit results out."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import pyarrow as pa

from mm2.kafka.copier import Copier, CopyResult, WorkUnit
from mm2.pipeline.spec import PipelineSpec

__all__ = ["RESULT_DDL", "RESULT_SCHEMA", "copy_function", "results_from_table"]

RESULT_SCHEMA = pa.schema(
    [
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("target_topic", pa.string()),
        ("start", pa.int64()),
        ("until", pa.int64()),
        ("records", pa.int64()),
        ("bytes", pa.int64()),
        ("skipped", pa.int64()),
        ("runs", pa.string()),
        ("min_timestamp", pa.int64()),
        ("max_timestamp", pa.int64()),
        ("sum_timestamp", pa.int64()),
        ("finished_ms", pa.int64()),
        ("age_min_ms", pa.int64()),
        ("age_max_ms", pa.int64()),
        ("age_sum_ms", pa.int64()),
    ]
)

# The same columns in Spark's DDL, as mapInArrow takes them.
RESULT_DDL = ", ".join(
    f"{f.name} {'string' if f.type == pa.string() else 'int' if f.type == pa.int32() else 'long'}"
    for f in RESULT_SCHEMA
)

# Python workers are reused across micro-batches: keep one Copier per flow per worker.
_COPIERS: dict[str, Copier] = {}


def _copier(spec: PipelineSpec) -> Copier:
    key = spec.to_json()
    copier = _COPIERS.get(key)
    if copier is None:
        copier = Copier(
            spec.source_consumer, spec.target_producer, skip_oversized=spec.skip_oversized
        )
        _COPIERS[key] = copier
    return copier


def _row(res: CopyResult) -> dict[str, object]:
    u = res.unit
    return {
        "topic": u.topic,
        "partition": u.partition,
        "target_topic": u.target_topic,
        "start": u.start,
        "until": u.until,
        "records": res.records,
        "bytes": res.bytes,
        "skipped": res.skipped,
        "runs": json.dumps(res.runs),
        "min_timestamp": res.min_timestamp,
        "max_timestamp": res.max_timestamp,
        "sum_timestamp": res.sum_timestamp,
        "finished_ms": res.finished_ms,
        "age_min_ms": res.age_min_ms,
        "age_max_ms": res.age_max_ms,
        "age_sum_ms": res.age_sum_ms,
    }


def results_from_table(table: pa.Table) -> list[CopyResult]:
    """Rebuild CopyResults on the driver from the collected result table."""
    out = []
    for row in table.to_pylist():
        unit = WorkUnit(
            row["topic"], row["partition"], row["start"], row["until"], row["target_topic"]
        )
        out.append(
            CopyResult(
                unit,
                records=row["records"],
                bytes=row["bytes"],
                skipped=row["skipped"],
                runs=[(u, d, n) for u, d, n in json.loads(row["runs"])],
                min_timestamp=row["min_timestamp"],
                max_timestamp=row["max_timestamp"],
                sum_timestamp=row["sum_timestamp"],
                finished_ms=row["finished_ms"],
                age_min_ms=row["age_min_ms"],
                age_max_ms=row["age_max_ms"],
                age_sum_ms=row["age_sum_ms"],
            )
        )
    return out


def copy_function(spec_json: str) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The function mapInArrow runs for one flow."""

    def copy(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        spec = PipelineSpec.from_json(spec_json)
        units = [
            WorkUnit(r["topic"], r["partition"], r["start"], r["until"], r["target_topic"])
            for batch in batches
            for r in batch.to_pylist()
        ]
        results = _copier(spec).copy(units) if units else []
        yield pa.RecordBatch.from_pylist([_row(r) for r in results], schema=RESULT_SCHEMA)

    return copy
