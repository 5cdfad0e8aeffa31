"""REST names of connectors: `<source>.<target>.<ConnectorClass>`, unique across flows.

Apache names each flow's connectors by their simple class names, which repeat in every flow;
the REST API needs one name per connector. Aliases with dots could make two flows produce the
same name (`a.b` + `c` and `a` + `b.c`): such a flow is refused when added. The plain class
name is accepted too when it designates one connector only.
"""

from __future__ import annotations

from collections.abc import Iterable

from mm2.errors import ConflictError, NotFoundError

__all__ = ["connector_name", "find_connector", "flow_name", "split_flow"]


def flow_name(source: str, target: str) -> str:
    return f"{source}->{target}"


def split_flow(flow: str) -> tuple[str, str]:
    source, _, target = flow.partition("->")
    return source, target


def connector_name(flow: str, plain: str) -> str:
    source, target = split_flow(flow)
    return f"{source}.{target}.{plain}"


def find_connector(
    name: str, connectors: Iterable[tuple[str, str]], preferred: Iterable[str] = ()
) -> tuple[str, str]:
    """(flow, plain name) of the connector `name` designates among (flow, plain) pairs.

    A plain name shared by several flows resolves to the one in `preferred` flows (the enabled
    ones) when that leaves a single candidate.
    """
    pairs = list(connectors)
    full = [(f, p) for f, p in pairs if connector_name(f, p) == name]
    if len(full) == 1:
        return full[0]
    if len(full) > 1:
        raise ConflictError(f"connector name {name!r} is ambiguous: flow aliases contain dots")
    plain = [(f, p) for f, p in pairs if p == name]
    if len(plain) > 1:
        wanted = set(preferred)
        plain = [(f, p) for f, p in plain if f in wanted] or plain
    if len(plain) == 1:
        return plain[0]
    if not plain:
        raise NotFoundError(f"Connector {name} not found")
    names = ", ".join(sorted(connector_name(f, p) for f, p in plain))
    raise ConflictError(f"connector name {name!r} is ambiguous; use one of: {names}")
