"""Changes made over REST, kept in one JSON file so they survive a restart of the process.

How they combine with mm2.properties (the file is read again at every start):
1. `properties`: raw mm2.properties keys set over REST (the clusters and `A->B.*` keys of flows
   added with POST /flows) win over the file's value of the same key; `clusters` lists the
   aliases added over REST, appended to the file's `clusters`.
2. `added_flows` run besides the file's flows; `removed_flows`, deleted over REST, stay
   deleted whatever the file says, until a POST /flows adds them again.
3. `connector_configs`: a connector config put over REST replaces the one resolved from the
   file; `deleted_connectors` are not started until a config is put for them again.
4. `target_states`: a connector paused or stopped over REST starts paused or stopped.
Connector keys are the REST names (`<source>.<target>.<ConnectorClass>`).

With a standby (mm2.runtime.standby) the changes live in Kafka: `publish` writes them there
before the file, and the file is only a cache, replaced when another process's changes arrive.
The file is written atomically (mm2.runtime.state_file); one that is damaged or holds the
wrong types stops the start with a line naming it, and is never overwritten.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pydantic import TypeAdapter, ValidationError

from mm2.runtime.state_file import StateFileError, read_json, write_json
from mm2.runtime.status import TargetState

__all__ = ["ChangeStore", "Changes", "Codec", "changes_from_json"]


@dataclass
class Changes:
    """Everything the REST API changed, relative to mm2.properties."""

    clusters: list[str] = field(default_factory=list)
    properties: dict[str, str] = field(default_factory=dict)
    added_flows: list[str] = field(default_factory=list)
    removed_flows: list[str] = field(default_factory=list)
    connector_configs: dict[str, dict[str, str]] = field(default_factory=dict)
    deleted_connectors: list[str] = field(default_factory=list)
    target_states: dict[str, TargetState] = field(default_factory=dict)


_ADAPTER: TypeAdapter[Changes] = TypeAdapter(Changes)


def changes_from_json(body: object) -> Changes:
    """The Changes a JSON document holds (unknown keys ignored); ValueError naming the first
    value of the wrong type."""
    if not isinstance(body, Mapping):
        raise ValueError(f"holds a JSON {type(body).__name__}, not an object")
    known = {k: v for k, v in body.items() if k in Changes.__dataclass_fields__}
    try:
        return _ADAPTER.validate_python(known)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ValueError(f"{where}: {first['msg']}") from None


class Codec(Protocol):
    """Changes to and from a JSON document with the secrets sealed."""

    def seal(self, changes: Changes) -> dict[str, Any]: ...
    def open(self, body: Mapping[str, Any]) -> Changes: ...


def _copy(changes: Changes) -> Changes:
    return Changes(**json.loads(json.dumps(asdict(changes))))


class ChangeStore:
    """The change file, replaced atomically on every change; readable by its owner only."""

    def __init__(self, path: Path, *, codec: Codec | None = None) -> None:
        """`codec` seals secrets in what the file keeps (default: kept as given)."""
        self.path = path
        self._codec = codec
        self._lock = threading.Lock()
        self._changes = self._read()
        self.publish: Callable[[Changes], None] | None = None

    def _read(self) -> Changes:
        body = read_json(self.path)
        if body is None:
            return Changes()
        try:
            if self._codec is not None:
                sealed = body.get("sealed", body) if isinstance(body, Mapping) else body
                return self._codec.open(sealed)
            return changes_from_json(body)
        except ValueError as exc:  # a ConfigError from the codec (a secret it cannot open) too
            raise StateFileError(
                self.path, f"holds REST changes that cannot be used: {exc}"
            ) from None

    @property
    def changes(self) -> Changes:
        """A copy: edit through update()."""
        with self._lock:
            return _copy(self._changes)

    def update(self, edit: Callable[[Changes], None]) -> None:
        """Apply `edit` and write the file before returning (the change is then durable)."""
        with self._lock:
            changes = _copy(self._changes)
            edit(changes)
            if self.publish is not None:
                self.publish(changes)
            self._write(changes)
            self._changes = changes

    def replace(self, changes: Changes) -> None:
        """Take changes another process published (the file follows)."""
        with self._lock:
            self._write(changes)
            self._changes = _copy(changes)

    def _write(self, changes: Changes) -> None:
        body = asdict(changes) if self._codec is None else {"sealed": self._codec.seal(changes)}
        write_json(self.path, body, mode=0o600)
