"""The Schema Registry step of a switchover or a failover of a flow A->B.

Applications that move from A to B produce there, and their serializers register schemas in
B's registry; a flow that kept IDs left B in IMPORT mode, which refuses them. So the step puts
B's registry in READWRITE (mm2.schemas.modes; nothing when it is already, or has no modes),
and says what the flow the other way, B->A, will do with IDs in A's registry: keep them (A in
IMPORT) or translate them (A numbers what it receives, so nothing clashes). It never changes
A's mode: that is the operator's choice, to be made before B->A's first pass.

Only a flow whose two clusters both name a registry has the step. It never raises: a
registry that fails is said, with the cause, and marks the step failed; whatever else the
switchover or failover did stands.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from mm2.config import Flow
from mm2.config.model import SOURCE, syncs_schemas
from mm2.errors import MM2Error
from mm2.schemas.client import RegistryClient
from mm2.schemas.modes import ids_back, make_writable

__all__ = ["RegistryStep", "make_target_writable", "mirrors_schemas"]

Open = Callable[[Mapping[str, str]], RegistryClient]


@dataclass(frozen=True)
class RegistryStep:
    """What the step said, line by line, and whether B's registry could not be made writable."""

    said: tuple[str, ...]
    failed: bool = False

    def to_json(self) -> dict[str, object]:
        return {"said": list(self.said), "failed": self.failed}


def mirrors_schemas(flow: Flow) -> bool:
    """Whether both clusters of the flow name a Schema Registry (its schema connector's
    condition; `sync.schemas.enabled = false` stops the sync, the registries stay named)."""
    return syncs_schemas(flow.connectors[SOURCE])


def make_target_writable(
    flow: Flow,
    back: Flow | None = None,
    *,
    dry_run: bool = False,
    say: Callable[[str], None] = lambda line: None,
    open_client: Open = RegistryClient.from_config,
) -> RegistryStep:
    """Make `flow.target`'s registry writable and say what `back` (target->source) will do
    with schema IDs; each line goes to `say` as it is known. A dry run changes nothing."""
    said: list[str] = []

    def tell(line: str) -> None:
        said.append(line)
        say(line)

    a, b = flow.source, flow.target
    if not mirrors_schemas(flow):
        tell(f"{flow.name} mirrors no schemas: no registry to change")
        return RegistryStep(tuple(said))
    failed = False
    try:
        with open_client(flow.schema_registry_config("target")) as client:
            writable = make_writable(client, name=f"{b}'s registry", dry_run=dry_run)
        tell(writable.said)
        failed = writable.failed
    except MM2Error as exc:  # settings that cannot work (a URL, TLS files)
        tell(f"{b}'s registry: not made writable: {exc}")
        failed = True
    if back is None or not mirrors_schemas(back):
        tell(f"no flow {b}->{a} mirrors schemas: schemas registered on {b} stay there")
        return RegistryStep(tuple(said), failed)
    try:
        if back.settings.schema.sync_schemas_interval_seconds is None:
            tell(
                f"{back.name} has sync.schemas.enabled = false: schemas registered on {b} "
                "stay there"
            )
        else:
            with open_client(back.schema_registry_config("target")) as client:
                tell(ids_back(client, name=f"{a}'s registry", flow_back=back.name))
    except MM2Error as exc:
        tell(f"{back.name}: {a}'s registry not read: {exc}")
    return RegistryStep(tuple(said), failed)
