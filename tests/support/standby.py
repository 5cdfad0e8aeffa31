"""Two connect-mirror-maker processes with one mm2.properties: who leads, as their REST says."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from tests.support.kafka import content, count, read_topic
from tests.support.mirror import ContinuousProducer, MirrorProcess, free_port, write_properties
from tests.support.waiting import eventually

__all__ = [
    "all_copied",
    "copied_once",
    "leader_urls",
    "leaders",
    "leads",
    "logs_of",
    "steady_load",
    "two_nodes",
]


def leaders(url: str) -> dict[str, dict[str, object] | None]:
    """`GET /leaders` of one node ({} while it does not answer)."""
    try:
        answer = httpx.get(f"{url}/leaders", timeout=10)
    except httpx.HTTPError:
        return {}
    return answer.json() if answer.status_code == 200 else {}


def leads(url: str, cluster: str = "backup") -> bool:
    found = leaders(url).get(cluster)
    return bool(found and found.get("this_worker"))


def leader_urls(urls: list[str]) -> list[str]:
    return [url for url in urls if leads(url)]


def two_nodes(
    tmp_path: Path, primary: Any, backup: Any, topic: str, extra: str = ""
) -> tuple[list[MirrorProcess], list[str]]:
    """Nodes `a` and `b` on free ports, sharing a config topic of their own (session 6 s)."""
    configs = f"mm2-configs.{uuid.uuid4().hex[:12]}.internal"
    ports = [free_port()]
    while len(ports) < 2:  # the OS may hand out the port it just freed again
        port = free_port()
        if port not in ports:
            ports.append(port)
    mirrors = []
    for name, port in zip(("a", "b"), ports, strict=True):
        directory = tmp_path / name
        directory.mkdir()
        mirrors.append(
            MirrorProcess(
                write_properties(
                    directory,
                    primary.bootstrap_servers,
                    backup.bootstrap_servers,
                    topic,
                    f"listeners = http://127.0.0.1:{port}\nmm2.configs.topic = {configs}\n"
                    f"mm2.leader.session.timeout.ms = 6000\n{extra}",
                )
            )
        )
    return mirrors, [f"http://127.0.0.1:{p}" for p in ports]


def logs_of(mirrors: list[MirrorProcess]) -> Callable[[], str]:
    """The tail of every node's log, for a failed wait to show (nodes added later included)."""

    def logs() -> str:
        return "\n".join(f"--- {m.log_path.name}\n{m.log()[-6000:]}" for m in mirrors)

    return logs


def steady_load(primary: Any, topic: str, partitions: int) -> ContinuousProducer:
    """200 records/s to every partition of `topic` in turn, idempotent, until stopped."""
    return ContinuousProducer(
        primary,
        topic,
        rate=200,
        limit=10**9,
        seconds=3600,
        partitions=partitions,
        config={"enable.idempotence": True},
    )


def all_copied(load: ContinuousProducer, backup: Any, remote: str, logs: Callable[[], str]) -> None:
    """Stop the load and wait until the target holds every record sent, and a little longer:
    time enough to copy anything twice, if it would."""
    load.stop()
    load.join()
    sent = load.sent
    eventually(
        lambda: count(backup.bootstrap_servers, remote) >= sent,
        timeout=240,
        what="every record on the target",
        log=logs,
    )
    time.sleep(3)


def copied_once(primary: Any, backup: Any, topic: str) -> None:
    """Every partition of `topic` on the target, for a read_committed reader, is the source's:
    nothing lost, doubled or reordered."""
    upstream = read_topic(primary.bootstrap_servers, topic)
    downstream = read_topic(
        backup.bootstrap_servers, f"primary.{topic}", **{"isolation.level": "read_committed"}
    )
    for p, records in upstream.items():
        want, got = content(records), content(downstream.get(p, []))
        assert got == want, f"partition {p}: {len(got)} copied of {len(want)}, or reordered"
