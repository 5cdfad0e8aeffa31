"""Two connect-mirror-maker processes with one mm2.properties: who leads, as their REST says."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import httpx

from tests.support.mirror import MirrorProcess, free_port, write_properties

__all__ = ["leader_urls", "leaders", "leads", "two_nodes"]


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
    ports = [free_port(), free_port()]
    mirrors = []
    for name, port in zip(("a", "b"), ports, strict=True):
        directory = tmp_path / name
        directory.mkdir()
        mirrors.append(MirrorProcess(write_properties(
            directory, primary.bootstrap_servers, backup.bootstrap_servers, topic,
            f"listeners = http://127.0.0.1:{port}\nmm2.configs.topic = {configs}\n"
            f"mm2.leader.session.timeout.ms = 6000\n{extra}",
        )))  # fmt: skip
    return mirrors, [f"http://127.0.0.1:{p}" for p in ports]
