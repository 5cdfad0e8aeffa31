"""bench --avro: the values Confluent's serializer would write, the verifier's map back, the flag
rules, and the schema section of the results."""

from __future__ import annotations

import io
from pathlib import Path

import fastavro
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench.avro import SCHEMA, Registries, avro_value, ids_back
from bench.data import RecordShape, record
from bench.report import SCHEMA_NOTE, markdown
from bench.settings import parse_args


@given(st.integers(1, 2**31 - 1), st.integers(0, 2**62), st.binary(max_size=64))
def test_a_value_is_magic_byte_id_and_the_avro_body(
    schema_id: int, index: int, payload: bytes
) -> None:
    value = avro_value(schema_id, index, payload)
    assert value[0] == 0
    assert int.from_bytes(value[1:5], "big") == schema_id
    body = fastavro.schemaless_reader(io.BytesIO(value[5:]), fastavro.parse_schema(SCHEMA), None)
    assert body == {"index": index, "payload": payload}


def test_records_are_avro_only_with_a_schema_id() -> None:
    pool = RecordShape(64, schema_id=7).pool()
    key, plain = record(3, pool)
    _, framed = record(3, pool, 7)
    assert key == b"k3"
    assert plain[:8] == (3).to_bytes(8, "big")
    assert framed[:5] == b"\x00\x00\x00\x00\x07"
    assert framed != record(4, pool, 7)[1]


def test_ids_back_maps_only_the_target_id() -> None:
    back = ids_back(source_id=7, target_id=12)
    translated = avro_value(12, 1, b"x")
    assert back(translated) == avro_value(7, 1, b"x")
    # A value copied with the source's ID, or with any other, stays as it is: the digest of the
    # target then differs from the source's and the run fails.
    assert back(avro_value(7, 1, b"x")) == avro_value(7, 1, b"x")
    assert back(avro_value(13, 1, b"x")) == avro_value(13, 1, b"x")
    assert back(None) is None
    assert back(b"") == b""


def test_mm2_schemas_needs_avro(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse_args(["--systems", "mm2,mm2-schemas"])
    assert "add --avro" in capsys.readouterr().err
    s = parse_args(["--quick", "--avro", "--systems", "mm2,mm2-schemas,apache"])
    assert s.avro and s.systems == ("mm2", "mm2-schemas", "apache")


def test_mm2_schemas_gets_both_registry_urls(tmp_path: Path) -> None:
    props = Registries(tmp_path).mirror_properties()
    assert set(props) == {"primary.schema.registry.url", "backup.schema.registry.url"}
    assert all(url.endswith("/apis/ccompat/v7") for url in props.values())
    assert props["primary.schema.registry.url"] != props["backup.schema.registry.url"]


def _system(rate: float, p99: float, cpu: float) -> dict[str, object]:
    return {
        "records_per_s": rate,
        "cpu_s_per_m": cpu,
        "latency_ms": {"p50": p99 / 10, "p99": p99},
        "verify": {"ok": True, "records_source": 1, "records_target": 1},
    }


def test_schema_section_sets_translated_beside_as_is() -> None:
    results = {
        "w1": {"mm2": _system(90_000, 0, 100), "mm2-schemas": _system(81_000, 0, 110)},
        "w2": {"mm2": _system(0, 200, 100), "mm2-schemas": _system(0, 300, 120)},
    }
    text = markdown(results)
    assert SCHEMA_NOTE in text
    section = text[text.index(SCHEMA_NOTE) :]
    assert "| W1 | throughput (records/s) | 90,000 | 81,000 | 0.90 |" in section
    assert "| W4 | CPU during W1 (CPU s / M records) | 100 | 110 | 1.10 |" in section
    assert "p99 (ms) | 200 | 300 | 1.50 |" in section
    assert SCHEMA_NOTE not in markdown({"w1": {"mm2": _system(1, 0, 1)}})
