"""A Spark streaming source whose rows are work units over the source cluster's offsets.

Record bytes never pass through it: each row names a range of one partition, and the copy step
(mm2.pipeline.copy) reads and writes the records inside the Python workers.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadLimit
from pyspark.sql.types import StructType

from mm2.kafka.copier import WorkUnit
from mm2.kafka.offsets import OffsetLister
from mm2.pipeline.planning import Offsets, group_units, plan_end, plan_units
from mm2.pipeline.routes import read_routes
from mm2.pipeline.spec import PipelineSpec

__all__ = ["UNIT_SCHEMA", "WorkUnitSource"]

UNIT_SCHEMA = "topic string, partition int, start long, until long, target_topic string"


class _UnitGroup(InputPartition):
    """The units one Spark task copies."""

    def __init__(self, units: list[WorkUnit]) -> None:
        super().__init__(len(units))
        self.units = units


class _UnitReader(DataSourceStreamReader):
    def __init__(self, spec: PipelineSpec) -> None:
        self._spec = spec
        self._source: OffsetLister | None = None

    def _lister(self) -> OffsetLister:
        if self._source is None:
            self._source = OffsetLister(self._spec.source_admin or self._spec.source_consumer)
        return self._source

    def _earliest(self, partitions: Iterable[tuple[str, int]]) -> dict[tuple[str, int], int]:
        return self._lister().offsets(
            partitions, latest=False, read_committed=self._spec.read_committed
        )

    def initialOffset(self) -> Offsets:
        return {}

    def latestOffset(self, start: Offsets, limit: ReadLimit) -> Offsets:
        routes = read_routes(self._spec.routes_file)
        wanted = [(r.topic, p) for r in routes.values() for p in range(r.partitions)]
        latest = self._lister().offsets(
            wanted, latest=True, read_committed=self._spec.read_committed
        )
        end = plan_end(
            start,
            latest,
            self._earliest,
            max_records_per_partition=self._spec.max_records_per_partition,
            from_latest=self._spec.from_latest,
        )
        return end

    def partitions(self, start: Offsets, end: Offsets) -> Sequence[InputPartition]:
        routes = read_routes(self._spec.routes_file)
        units = plan_units(start, end, routes, self._earliest)
        groups = group_units(units, self._spec.tasks_max, slots=self._spec.slots)
        return [_UnitGroup(g) for g in groups]

    def read(self, partition: InputPartition) -> Iterator[tuple[str, int, int, int, str]]:
        assert isinstance(partition, _UnitGroup)
        for u in partition.units:
            yield (u.topic, u.partition, u.start, u.until, u.target_topic)

    def commit(self, end: Offsets) -> None:
        """Positions are kept in Spark's checkpoint; nothing to do at the source."""


class WorkUnitSource(DataSource):
    """`spark.readStream.format("mm2-units").option("spec", spec.to_json())`."""

    @classmethod
    def name(cls) -> str:
        return "mm2-units"

    def schema(self) -> str:
        return UNIT_SCHEMA

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return _UnitReader(PipelineSpec.from_json(self.options["spec"]))
