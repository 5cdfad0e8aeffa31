"""A registry's mode at a failover or a switchover: the new active side made writable.

A flow keeps schema IDs only into a target registry in IMPORT mode, and a registry in IMPORT
refuses what producers register themselves (a registration without an ID); an operator may
also hold the standby's registry READONLY. Producers that move to the target at a failover or
a switchover, registering a new schema or auto-registering one, need it READWRITE:
`make_writable` reads its mode and puts it there. It is the one place where mm2 changes a
mode, and only when an operator asks (`mm2 switchover`, `mm2 failover --schema-registry`): the
schema sync never does. A registry without modes (Apicurio 3.0 answers 404 on `/mode`) accepts
registrations as it is.

`ids_back` changes nothing: it says what the flow the other way (B->A, the way back) will do
with schema IDs given A's mode, and what to do before its first pass to keep them.
"""

from __future__ import annotations

from dataclasses import dataclass

from mm2.schemas.client import RegistryClient, SchemaRegistryError

__all__ = ["Writable", "ids_back", "make_writable"]

READWRITE = "READWRITE"


@dataclass(frozen=True)
class Writable:
    """What `make_writable` found and did: the mode before (None: no modes, or not read),
    whether it sent `PUT /mode`, one line for the operator, and the cause when it failed."""

    url: str
    before: str | None
    changed: bool
    said: str
    error: str = ""

    @property
    def failed(self) -> bool:
        return bool(self.error)


def make_writable(client: RegistryClient, *, name: str, dry_run: bool = False) -> Writable:
    """Put the registry in READWRITE unless it is there already or has no modes. `name` says
    whose registry it is (`backup's registry`); a dry run reads and says, changes nothing."""
    url = client.url
    try:
        before = client.mode()
        if before is None:
            # A 404 on /mode is a registry without modes only if the API itself answers there
            # (a URL without /apis/ccompat/v7 answers 404 to everything).
            client.subjects()
    except SchemaRegistryError as exc:
        return Writable(url, None, False, f"{name}: not made writable: {exc}", error=str(exc))
    if before is None:
        said = f"{name} ({url}) has no modes: it accepts registrations as it is"
        return Writable(url, None, False, said)
    if before == READWRITE:
        said = f"{name} ({url}) is READWRITE already: producers can register schemas there"
        return Writable(url, before, False, said)
    put = f'PUT {url}/mode {{"mode": "READWRITE"}}'
    if dry_run:
        return Writable(
            url,
            before,
            False,
            f"{name} ({url}) is {before}: would be put in "
            f"READWRITE ({put}) so that producers can register schemas",
        )
    try:
        client.set_mode(READWRITE)
    except SchemaRegistryError as exc:
        said = f"{name} is {before} and was not put in READWRITE: {exc}; do it yourself: {put}"
        return Writable(url, before, False, said, error=str(exc))
    said = f"{name} ({url}): {before} -> READWRITE: producers can register schemas there now"
    return Writable(url, before, True, said)


def ids_back(client: RegistryClient, *, name: str, flow_back: str) -> str:
    """What `flow_back` (whose target is this registry) will do with schema IDs, from the
    registry's mode; a registry that does not answer is said, never an error (at a failover
    the old active side is often down)."""
    url = client.url
    try:
        mode = client.mode()
    except SchemaRegistryError as exc:
        return f"{flow_back}: the mode of {name} not read ({exc}); its sync decides when it runs"
    if mode == "IMPORT":
        return (
            f"{flow_back} will keep schema IDs: {name} ({url}) is in IMPORT mode (it refuses "
            f"registrations of producers of its own until it is READWRITE again)"
        )
    if mode is None:
        return (
            f"{flow_back} will translate schema IDs: {name} ({url}) has no modes and "
            "numbers schemas its own way"
        )
    how = f'PUT {url}/mode?force=true {{"mode": "IMPORT"}}'
    if mode == READWRITE:
        return (
            f"{flow_back} will translate schema IDs: {name} ({url}) is READWRITE, so it "
            f"numbers what it receives (no ID clash). To keep IDs instead, put it in IMPORT "
            f"before {flow_back}'s first pass: {how} (mm2 changes no mode on its "
            "own)"
        )
    return (
        f"{flow_back} cannot register schemas: {name} ({url}) is {mode}. Before it starts, "
        f"put it in IMPORT to keep IDs ({how}) or in READWRITE to translate them"
    )
