"""A connector's offsets over REST: read, alter, reset (Connect: only changed while the
connector is STOPPED). Where they are kept is the OffsetStore's business (mm2.runtime.offsets)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from mm2.config.providers import ProviderProblem
from mm2.errors import BadRequestError, ConflictError
from mm2.runtime.flow_set import FlowSet
from mm2.runtime.offsets import ConnectorOffset, OffsetStore
from mm2.runtime.validation import plugin_name

__all__ = ["STOPPING_WAIT_S", "ConnectorOffsets"]

# How long a change waits for a stopped connector's tasks to end (a clean stop takes <= 10 s).
STOPPING_WAIT_S = 15.0


class ConnectorOffsets:
    """Connect's /connectors/{name}/offsets over the OffsetStore of each connector class."""

    def __init__(self, flows: FlowSet, stores: Mapping[str, OffsetStore]) -> None:
        self._flows = flows
        self._stores = dict(stores)

    def _store(self, name: str, change: bool) -> tuple[OffsetStore | None, dict[str, str]]:
        herder, plain, full = self._flows.locate(name)
        config = herder.started_config(plain)  # the offsets topic is a worker key
        store = self._stores.get(plugin_name(config) or plain)
        if change and herder.status(plain).state != "STOPPED":
            raise BadRequestError(
                "Connectors must be in the STOPPED state before their offsets can be modified. "
                f"This can be done for the specified connector by issuing a 'PUT' request to "
                f"the '/connectors/{full}/stop' endpoint"
            )
        if change and store is None:
            raise BadRequestError(f"connector {full} keeps no offsets that could be modified")
        if change and not herder.wait_stopped(plain, STOPPING_WAIT_S):
            raise ConflictError(
                f"the tasks of {full} are still stopping (they may still write their last "
                "positions, which would undo this change); try again in a few seconds"
            )
        return store, config

    def _resolved(self, config: Mapping[str, str]) -> dict[str, str]:
        try:
            return self._flows.providers.resolve_all(config)
        except ProviderProblem as exc:
            raise BadRequestError(str(exc)) from None

    def read(self, name: str) -> list[ConnectorOffset]:
        store, config = self._store(name, change=False)
        return [] if store is None else store.read(self._resolved(config))

    def alter(self, name: str, offsets: Sequence[ConnectorOffset]) -> None:
        if not offsets:
            raise BadRequestError("The offsets to modify must not be empty", {"offsets": ["empty"]})
        store, config = self._store(name, change=True)
        assert store is not None
        store.alter(self._resolved(config), offsets)

    def reset(self, name: str) -> None:
        store, config = self._store(name, change=True)
        assert store is not None
        store.reset(self._resolved(config))
