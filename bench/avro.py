"""W1 and W2 with Avro records (`--avro`): the cost of translating schema IDs.

With `--avro` the value of record i is what Confluent's Avro serializer writes: the magic byte
0, the 4-byte ID the source registry gave the bench's schema, then the Avro body of
`{"index": i, "payload": <the pool's bytes>}`. Two Apicurio registries run beside the clusters,
one per cluster. The system `mm2-schemas` is mm2 with both `<alias>.schema.registry.url` set: its
schema connector copies the subject to the target registry and its copy tasks rewrite the ID of
every value to the target's. `mm2` and Apache MM2 copy the same records byte for byte.

The target registry is given schemas of its own first, so that it numbers the bench's schema
differently from the source: a value copied with the source's ID would not verify. The verifier
maps the target's ID back to the source's before the digest (`ids_back`), and only a value that
carries exactly the target's ID is mapped: a value with any other ID fails the comparison.
"""

from __future__ import annotations

import io
import json
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import fastavro
import httpx

from mm2.localcluster.apicurio import ApicurioRegistry

__all__ = ["SCHEMA", "Registries", "ValueMap", "avro_value", "ids_back"]

SCHEMA = {
    "type": "record",
    "name": "BenchRecord",
    "namespace": "mm2.bench",
    "fields": [{"name": "index", "type": "long"}, {"name": "payload", "type": "bytes"}],
}
_PARSED = fastavro.parse_schema(SCHEMA)
_PADS = 3  # the target registry's own schemas, registered before any of the bench's
_PAD_FIELD = {"name": "x", "type": "int"}
_MAGIC = b"\x00"

ValueMap = Callable[[bytes | None], bytes | None]


def avro_value(schema_id: int, index: int, payload: bytes) -> bytes:
    """The value Confluent's Avro serializer writes for {"index": index, "payload": payload}."""
    body = io.BytesIO()
    body.write(_MAGIC + schema_id.to_bytes(4, "big"))
    fastavro.schemaless_writer(body, _PARSED, {"index": index, "payload": payload})
    return body.getvalue()


def ids_back(source_id: int, target_id: int) -> ValueMap:
    """For the target's values: the target's ID put back to the source's, nothing else changed."""
    target_prefix = _MAGIC + target_id.to_bytes(4, "big")
    source_prefix = _MAGIC + source_id.to_bytes(4, "big")

    def back(value: bytes | None) -> bytes | None:
        if value is not None and value.startswith(target_prefix):
            return source_prefix + value[5:]
        return value

    return back


def _register(registry: ApicurioRegistry, subject: str, schema: Mapping[str, object]) -> int:
    answer = httpx.post(
        f"{registry.url}/subjects/{subject}/versions",
        json={"schema": json.dumps(schema)},
        timeout=60,
    )
    if answer.status_code != 200:
        raise RuntimeError(f"registering {subject} on {registry.url}: {answer.text}")
    return int(answer.json()["id"])


class Registries:
    """A source and a target Apicurio registry for the run: start(), then close()."""

    def __init__(self, workdir: Path) -> None:
        self.source = ApicurioRegistry("source", workdir)
        self.target = ApicurioRegistry("target", workdir)

    def start(self) -> None:
        """Both JVMs boot at once; then the target's own schemas go in. All stopped on failure."""
        try:
            for registry in (self.source, self.target):
                registry.launch()
            for registry in (self.source, self.target):
                registry.wait_ready()
            for i in range(_PADS):
                pad = {"type": "record", "name": f"Pad{i}", "fields": [_PAD_FIELD]}
                _register(self.target, f"bench-pad-{i}", pad)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        self.target.stop()
        self.source.stop()

    def mirror_properties(self) -> dict[str, str]:
        """What mm2-schemas adds to mm2.properties."""
        return {
            "primary.schema.registry.url": self.source.url,
            "backup.schema.registry.url": self.target.url,
        }

    def register_value_schema(self, topic: str) -> int:
        """The bench's schema under the topic's value subject (TopicNameStrategy); its ID."""
        return _register(self.source, f"{topic}-value", SCHEMA)

    def target_id(self, remote_topic: str, timeout_s: float = 120.0) -> int:
        """The ID the target registry gave the mirrored subject of the remote topic."""
        subject = f"{remote_topic}-value"
        deadline = time.monotonic() + timeout_s
        while True:
            answer = httpx.get(f"{self.target.url}/subjects/{subject}/versions/latest", timeout=30)
            if answer.status_code == 200:
                return int(answer.json()["id"])
            if time.monotonic() > deadline:
                raise RuntimeError(f"{subject} is not on the target registry: {answer.text}")
            time.sleep(1.0)
