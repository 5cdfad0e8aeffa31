"""The topic ACLs of MirrorSourceConnector's control plane: the target's ACLs derived from the
source's (connectors.topic_rules decides which), created and never deleted, as Apache MM2 does."""

from __future__ import annotations

import math
from collections.abc import Callable

from mm2.config.model import Flow
from mm2.connectors.once_log import OnceLog
from mm2.connectors.topic_rules import acl_bindings_to_sync
from mm2.errors import KafkaClientError
from mm2.kafka.acls import AclBinding
from mm2.kafka.topics import TopicAdmin

__all__ = ["AclSync"]


class AclSync:
    """Creates the target's topic ACLs for one flow; `sync()` every sync.topic.acls interval."""

    def __init__(
        self,
        flow: Flow,
        source: TopicAdmin,
        target: TopicAdmin,
        once: OnceLog,
        *,
        replicated: Callable[[str], bool],
        remote_topic: Callable[[str], str],
        clock: Callable[[], float],
        resync_seconds: float,
        recheck_seconds: float,
    ) -> None:
        """`replicated(topic)`: the flow copies the source topic; `remote_topic(topic)`: its
        name on the target. Without an authorizer the source is asked again every
        `recheck_seconds`; everything is created again every `resync_seconds`, which repairs
        ACLs deleted on the target."""
        self._flow, self._source, self._target, self._once = flow, source, target, once
        self._replicated, self._remote_topic = replicated, remote_topic
        self._clock, self._resync, self._recheck = clock, resync_seconds, recheck_seconds
        self._created: set[AclBinding] = set()
        self._reset = -math.inf
        self._no_authorizer_since: float | None = None

    def sync(self) -> int:
        """Create the bindings not created yet; the count."""
        now, log, name = self._clock(), self._once.log, self._flow.name
        quiet = self._no_authorizer_since
        if quiet is not None and now - quiet < self._recheck:
            log.debug("%s: no ACL authorizer on %s, skipping", name, self._flow.source)
            return 0
        if now - self._reset >= self._resync:
            self._created.clear()
            self._reset = now
        try:
            bindings = self._source.describe_topic_acls()
        except KafkaClientError as exc:
            return self._once.failed(exc, "sync-acls", "cannot read source topic ACLs", 0)
        if bindings is None:
            if self._no_authorizer_since is None:
                log.info(
                    "%s: no ACL authorizer is configured on %s, so no topic ACL syncing will "
                    "take place; consider setting sync.topic.acls.enabled=false",
                    name,
                    self._flow.source,
                )
            else:
                log.debug("%s: no ACL authorizer on %s, skipping", name, self._flow.source)
            self._no_authorizer_since = now
            return 0
        self._no_authorizer_since = None
        wanted = acl_bindings_to_sync(bindings, self._replicated, self._remote_topic)
        new = [b for b in dict.fromkeys(wanted) if b not in self._created]
        if not new:
            return 0
        try:
            failures = self._target.create_acls(new)
        except KafkaClientError as exc:
            what = f"creating ACLs on {self._flow.target} failed"
            return self._once.failed(exc, "sync-acls", what, 0)
        self._once.forget("sync-acls")
        if failures:
            first = next(iter(failures.values()))
            self._once.warn("acls", f"{len(failures)} ACL bindings not created: {first}")
        created = [b for b in new if b not in failures]
        self._created.update(created)
        if created:
            log.info(
                "%s: synced %d topic ACL bindings to %s", name, len(created), self._flow.target
            )
        return len(created)
