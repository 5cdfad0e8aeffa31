"""ShareGroupAdmin: list, describe, read and set share groups' start offsets on one cluster.

Blocking calls for the checkpoint task's thread, run on one asyncio loop of the admin's own
(a daemon thread) with one aiokafka client that keeps its connections between calls. Every
failure is a ShareGroupError naming the cluster and the call; `retriable` is aiokafka's verdict,
and a broker without share groups (before Kafka 4.1) is said as such, not retried.
"""

from __future__ import annotations

import asyncio
import ssl
import tempfile
import threading
from collections.abc import Coroutine, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from aiokafka.client import AIOKafkaClient, ConnectionGroup, CoordinationType
from aiokafka.errors import IncompatibleBrokerVersion, KafkaError, for_code
from aiokafka.helpers import create_ssl_context

from mm2.errors import ConfigError, KafkaClientError
from mm2.records import TP
from mm2.share_groups.protocol import (
    AlterShareGroupOffsets,
    DescribeShareGroupOffsets,
    ListGroups,
    ShareGroupDescribe,
)

__all__ = ["ShareGroupAdmin", "ShareGroupError", "ShareGroupState", "ShareOffset", "client_kwargs"]

T = TypeVar("T")
_NON_EMPTY_GROUP = 68  # AlterShareGroupOffsets while the group has members
_GROUP_ID_NOT_FOUND = 69


class ShareGroupError(KafkaClientError):
    """A share-group call failed; `unsupported` when the cluster has no share groups at all."""

    kind = "share-group"

    def __init__(self, message: str, *, retriable: bool, unsupported: bool = False) -> None:
        super().__init__(message, retriable=retriable)
        self.unsupported = unsupported


@dataclass(frozen=True)
class ShareOffset:
    """One partition of a share group: its start offset (SPSO; -1 before any is stored) and the
    broker's lag (records from the SPSO to the end not yet acknowledged; -1 when unknown)."""

    start: int
    lag: int


@dataclass(frozen=True)
class ShareGroupState:
    """A share group as ShareGroupDescribe says it is: Empty, Stable, ... or Dead (none)."""

    state: str
    members: int


def client_kwargs(config: Mapping[str, str]) -> dict[str, Any]:
    """aiokafka's client settings from a librdkafka config (the flow's resolved admin config).

    Only what reaches a broker: servers, client id, TLS and SASL with PLAIN or SCRAM. Anything
    else (GSSAPI, OAUTHBEARER) is a ConfigError naming the key, so that share groups are said
    to be off for the flow instead of failing somewhere."""
    protocol = config.get("security.protocol", "plaintext").upper()
    kwargs: dict[str, Any] = {
        "bootstrap_servers": config["bootstrap.servers"].split(","),
        "client_id": config.get("client.id", "mm2-share-groups"),
        "security_protocol": protocol,
        "request_timeout_ms": 30_000,
    }
    if protocol.startswith("SASL"):
        mechanism = config.get("sasl.mechanism", config.get("sasl.mechanisms", "GSSAPI")).upper()
        if mechanism not in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
            raise ConfigError(
                f"{mechanism} is not supported for share groups (PLAIN, SCRAM)",
                key="sasl.mechanism",
            )
        kwargs.update(
            sasl_mechanism=mechanism,
            sasl_plain_username=config.get("sasl.username"),
            sasl_plain_password=config.get("sasl.password"),
        )
    if protocol.endswith("SSL"):
        kwargs["ssl_context"] = _ssl_context(config)
    return kwargs


def _ssl_context(config: Mapping[str, str]) -> ssl.SSLContext:
    """Stores given as files or, from a JKS or PKCS12 keystore, as PEM text."""
    context: ssl.SSLContext = create_ssl_context(
        cafile=config.get("ssl.ca.location") or None,
        cadata=config.get("ssl.ca.pem") or None,
        certfile=config.get("ssl.certificate.location") or None,
        keyfile=config.get("ssl.key.location") or None,
        password=config.get("ssl.key.password") or None,
    )
    certificate, key = config.get("ssl.certificate.pem"), config.get("ssl.key.pem")
    if certificate and key:
        # Python's ssl reads a key pair from files only: private ones, gone once read.
        with tempfile.TemporaryDirectory(prefix="mm2-share-tls-") as folder:
            cert_file, key_file = Path(folder, "cert.pem"), Path(folder, "key.pem")
            cert_file.write_text(certificate, encoding="ascii")
            key_file.write_text(key, encoding="ascii")
            context.load_cert_chain(cert_file, key_file, config.get("ssl.key.password") or None)
    if config.get("ssl.endpoint.identification.algorithm", "https").lower() == "none":
        context.check_hostname = False
    return context


class ShareGroupAdmin:
    """The share groups of one cluster (`name` is its alias, for messages)."""

    def __init__(self, config: Mapping[str, str], *, name: str) -> None:
        self._name = name
        self._kwargs = client_kwargs(config)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name=f"share-groups-{name}", daemon=True
        )
        self._thread.start()
        self._client: AIOKafkaClient | None = None

    # -- the calls --
    def list_groups(self) -> list[str]:
        """Every share group of the cluster (ListGroups to every broker, type "share")."""
        return self._run(self._list_groups(), "listing share groups")

    def describe(self, group: str) -> ShareGroupState:
        return self._run(self._describe(group), f"describing share group {group!r}")

    def offsets(self, group: str) -> dict[TP, ShareOffset]:
        """The group's start offsets; an unknown group has none."""
        return self._run(self._offsets(group), f"reading share group {group!r}'s offsets")

    def alter_offsets(self, group: str, offsets: Mapping[TP, int]) -> bool:
        """Set these start offsets; False when the group has members (nothing is written)."""
        call = self._alter(group, dict(offsets))
        return self._run(call, f"setting share group {group!r}'s offsets")

    def close(self) -> None:
        if self._client is not None:
            asyncio.run_coroutine_threadsafe(self._client.close(), self._loop).result(30)
            self._client = None
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        if not self._thread.is_alive():
            self._loop.close()

    # -- on the loop --
    def _run(self, call: Coroutine[Any, Any, T], what: str) -> T:
        future = asyncio.run_coroutine_threadsafe(call, self._loop)
        try:
            return future.result(60)
        except ShareGroupError:
            raise
        except (IncompatibleBrokerVersion, NotImplementedError) as exc:
            raise ShareGroupError(
                f"{what} on {self._name}: the cluster has no share groups "
                f"(Kafka 4.1 or later): {exc}",
                retriable=False,
                unsupported=True,
            ) from None
        except KafkaError as exc:
            retriable = bool(getattr(exc, "retriable", True))
            raise ShareGroupError(f"{what} on {self._name}: {exc!r}", retriable=retriable) from None
        except TimeoutError:
            future.cancel()
            raise ShareGroupError(
                f"{what} on {self._name}: no answer within 60 s", retriable=True
            ) from None

    async def _connected(self) -> AIOKafkaClient:
        if self._client is None:
            client = AIOKafkaClient(**self._kwargs)
            try:
                await client.bootstrap()
            except BaseException:
                await client.close()
                raise
            self._client = client
        return self._client

    async def _coordinator(self, group: str) -> tuple[AIOKafkaClient, int]:
        client = await self._connected()
        return client, await client.coordinator_lookup(CoordinationType.GROUP, group)

    async def _list_groups(self) -> list[str]:
        client = await self._connected()
        await client.force_metadata_update()
        found: set[str] = set()
        for broker in client.cluster.brokers():
            answer = await client.send(broker.nodeId, ListGroups(["share"]))
            self._check(answer.error_code, None, "listing share groups")
            found.update(g[0] for g in answer.groups)
        return sorted(found)

    async def _describe(self, group: str) -> ShareGroupState:
        client, node = await self._coordinator(group)
        answer = await client.send(
            node, ShareGroupDescribe([group]), group=ConnectionGroup.COORDINATION
        )
        for error, message, group_id, state, *_rest, members, _ops, _tags in answer.groups:
            if group_id != group:
                continue
            if error == _GROUP_ID_NOT_FOUND:
                return ShareGroupState("Dead", 0)
            self._check(error, message, f"describing share group {group!r}")
            return ShareGroupState(state, len(members))
        return ShareGroupState("Dead", 0)

    async def _offsets(self, group: str) -> dict[TP, ShareOffset]:
        client, node = await self._coordinator(group)
        answer = await client.send(
            node, DescribeShareGroupOffsets(group), group=ConnectionGroup.COORDINATION
        )
        out: dict[TP, ShareOffset] = {}
        for _group, topics, error, message, _tags in answer.groups:
            if error == _GROUP_ID_NOT_FOUND:
                return {}
            self._check(error, message, f"reading share group {group!r}'s offsets")
            for topic, _id, partitions, _ttags in topics:
                for partition, start, _epoch, lag, perror, pmessage, _ptags in partitions:
                    self._check(perror, pmessage, f"reading {topic}-{partition} of {group!r}")
                    out[(topic, partition)] = ShareOffset(start, lag)
        return out

    async def _alter(self, group: str, offsets: dict[TP, int]) -> bool:
        client, node = await self._coordinator(group)
        answer = await client.send(
            node, AlterShareGroupOffsets(group, offsets), group=ConnectionGroup.COORDINATION
        )
        if answer.error_code == _NON_EMPTY_GROUP:
            return False
        self._check(answer.error_code, answer.error_message, f"setting {group!r}'s offsets")
        for topic, _id, partitions, _tags in answer.responses:
            for partition, error, message, _ptags in partitions:
                self._check(error, message, f"setting {topic}-{partition} of {group!r}")
        return True

    def _check(self, code: int, message: str | None, what: str) -> None:
        if code == 0:
            return
        error = for_code(code)
        text = f"{what} on {self._name}: {error.__name__} ({code})"
        if message:
            text += f": {message}"
        raise ShareGroupError(text, retriable=bool(getattr(error, "retriable", False)))
