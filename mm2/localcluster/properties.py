"""The server.properties of a one-node KRaft cluster: test-friendly defaults, listeners, ports."""

from __future__ import annotations

import base64
import re
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from mm2.errors import ConfigError

__all__ = [
    "BROKER_DEFAULTS",
    "LOG4J2",
    "BrokerLayout",
    "Endpoint",
    "default_client_listener",
    "layout_broker",
    "new_cluster_id",
    "parse_listeners",
    "render_properties",
]

# One node, so every internal topic has one replica; no waiting that only helps big clusters.
BROKER_DEFAULTS: Mapping[str, str] = {
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "5",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "5",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    "default.replication.factor": "1",
    "min.insync.replicas": "1",
    "group.initial.rebalance.delay.ms": "0",
    "auto.create.topics.enable": "false",
    "num.partitions": "1",
    "num.network.threads": "2",
    "num.io.threads": "4",
    "log.flush.interval.messages": "9223372036854775807",
    "log.segment.bytes": "67108864",
    "delete.topic.enable": "true",
}
_LISTENER = re.compile(r"^(?P<name>[A-Za-z0-9_]+)://(?P<host>[^:/]*|\[[^\]]*\]):(?P<port>\d+)$")
_PROTOCOLS = frozenset({"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"})
DEFAULT_LISTENERS = "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0"


@dataclass(frozen=True)
class Endpoint:
    """One listener: its name, host and (resolved) port."""

    name: str
    host: str
    port: int

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def __str__(self) -> str:
        return f"{self.name}://{self.address}"


@dataclass(frozen=True)
class BrokerLayout:
    """A node's final properties, its listeners and which ports the launcher picked itself."""

    properties: Mapping[str, str]
    endpoints: tuple[Endpoint, ...]
    controller_listener: str
    picked_ports: frozenset[int]

    def endpoint(self, name: str) -> Endpoint:
        for endpoint in self.endpoints:
            if endpoint.name == name:
                return endpoint
        known = ", ".join(e.name for e in self.endpoints)
        raise ConfigError(f"no listener named {name!r}; listeners are {known}", key="listeners")

    @property
    def client_endpoints(self) -> tuple[Endpoint, ...]:
        return tuple(e for e in self.endpoints if e.name != self.controller_listener)


def parse_listeners(value: str, *, key: str = "listeners") -> tuple[Endpoint, ...]:
    """`NAME://host:port,...` as endpoints; an empty host means 127.0.0.1, port 0 means pick one."""
    endpoints = []
    for part in (p.strip() for p in value.split(",")):
        if not part:
            continue
        match = _LISTENER.match(part)
        if match is None:
            raise ConfigError(f"{part!r} is not NAME://host:port", key=key)
        host = match["host"] or "127.0.0.1"
        endpoints.append(Endpoint(match["name"].upper(), host, int(match["port"])))
    if not endpoints:
        raise ConfigError("no listener given", key=key)
    return tuple(endpoints)


def _with_ports(endpoints: tuple[Endpoint, ...], pick: Callable[[], int]) -> tuple[Endpoint, ...]:
    return tuple(e if e.port else Endpoint(e.name, e.host, pick()) for e in endpoints)


def layout_broker(
    *,
    node_id: int,
    data_dir: Path,
    overrides: Mapping[str, str],
    pick_port: Callable[[], int],
) -> BrokerLayout:
    """Defaults, then `overrides`, then what follows from the listeners (voters, advertised)."""
    controller = overrides.get("controller.listener.names", "CONTROLLER").split(",")[0].strip()
    declared = parse_listeners(overrides.get("listeners", DEFAULT_LISTENERS))
    if all(e.name != controller for e in declared):
        declared = (*declared, Endpoint(controller, "127.0.0.1", 0))
    endpoints = _with_ports(declared, pick_port)
    picked = frozenset(e.port for e, d in zip(endpoints, declared, strict=True) if d.port == 0)
    ports = {e.name: e.port for e in endpoints}
    clients = [e for e in endpoints if e.name != controller]
    if not clients:
        raise ConfigError("needs a listener besides the controller's", key="listeners")
    names = [e.name for e in clients]
    inter = "PLAINTEXT" if "PLAINTEXT" in names else names[0]
    protocol_map = ",".join(
        f"{e.name}:{e.name if e.name in _PROTOCOLS else 'PLAINTEXT'}" for e in endpoints
    )
    cport = ports[controller]
    derived = {
        "process.roles": "broker,controller",
        "node.id": str(node_id),
        "controller.listener.names": controller,
        "listener.security.protocol.map": protocol_map,
        "controller.quorum.voters": f"{node_id}@{_named(endpoints, controller).host}:{cport}",
        "log.dirs": str(data_dir),
    }
    if "security.inter.broker.protocol" not in overrides:
        derived["inter.broker.listener.name"] = inter
    properties = {**BROKER_DEFAULTS, **derived, **overrides}
    properties["listeners"] = ",".join(str(e) for e in endpoints)
    advertised = overrides.get("advertised.listeners")
    if advertised is None:
        properties["advertised.listeners"] = ",".join(str(e) for e in clients)
    else:
        fixed = parse_listeners(advertised, key="advertised.listeners")
        properties["advertised.listeners"] = ",".join(
            str(e if e.port else Endpoint(e.name, e.host, ports.get(e.name, 0))) for e in fixed
        )
    return BrokerLayout(properties, endpoints, controller, picked)


def _named(endpoints: tuple[Endpoint, ...], name: str) -> Endpoint:
    return next(e for e in endpoints if e.name == name)


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")


def render_properties(properties: Mapping[str, str]) -> str:
    """A Java .properties file, one sorted `key=value` per line."""
    lines = [f"{_escape(k)}={_escape(v)}" for k, v in sorted(properties.items())]
    return "\n".join(lines) + "\n"


# The brokers' log4j2 configuration: INFO to stdout, which the launcher writes to the log file.
LOG4J2 = """\
status = warn
appender.out.type = Console
appender.out.name = out
appender.out.target = SYSTEM_OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = out
logger.kafka.name = kafka
logger.kafka.level = INFO
logger.state.name = state.change.logger
logger.state.level = WARN
"""


def new_cluster_id() -> str:
    """A Kafka cluster id: 16 random bytes, URL-safe base64 without padding, not led by '-'."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):  # would read as an option on the storage tool's command line
            return text


def default_client_listener(layout: BrokerLayout) -> str:
    names = [e.name for e in layout.client_endpoints]
    return "PLAINTEXT" if "PLAINTEXT" in names else names[0]
