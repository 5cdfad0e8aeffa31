"""TopicSync: MirrorSourceConnector's control plane (remote topics, partitions, configs, ACLs).

The decisions are in connectors.topic_rules; this module does the Kafka calls, remembers what it
already applied so that calling it every few seconds costs a couple of metadata requests, and
logs each change once (a pass that changes many topics, such as the first one over a thousand
source topics, logs one summary line).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace

from mm2.config.model import Flow
from mm2.connectors.acl_sync import AclSync
from mm2.connectors.once_log import DETAILED_CHANGES, OnceLog
from mm2.connectors.topic_rules import (
    TopicPlan,
    config_ops,
    new_topic_configs,
    plan_topics,
    should_replicate_topic,
)
from mm2.copy.routes import Route
from mm2.errors import KafkaClientError
from mm2.kafka.topics import ConfigOp, NewTopicSpec, TopicAdmin

__all__ = ["TopicSync"]

log = logging.getLogger(__name__)

# Apache re-applies configs and ACLs every interval, which repairs edits made on the target;
# we skip unchanged ones but still re-apply everything this often (Apache's default interval).
RESYNC_SECONDS = 600.0
# Without an authorizer, ask again this seldom (it only changes with a broker restart).
ACL_RECHECK_SECONDS = 60.0
# A remote topic whose max.message.bytes could not be read (not there yet, no DescribeConfigs
# ACL) is asked for again after this long, not at every poll of the planner.
LIMITS_RETRY_S = 30.0
# How long a pass waits for the topics it created to show in the target's metadata.
CREATED_WAIT_S = 2.0


class TopicSync:
    """Keeps the target's remote topics in step with the source for one flow.

    Call `refresh_topics()` every refresh.topics interval (its routes feed the pipeline),
    `sync_configs()` every sync.topic.configs interval and `sync_acls()` every sync.topic.acls
    interval, all from one thread.
    """

    def __init__(
        self,
        flow: Flow,
        source: TopicAdmin,
        target: TopicAdmin,
        *,
        clock: Callable[[], float] = time.monotonic,
        resync_seconds: float = RESYNC_SECONDS,
        acl_recheck_seconds: float = ACL_RECHECK_SECONDS,
    ) -> None:
        self.flow = flow
        self._source = source
        self._target = target
        self._clock = clock
        self._resync = resync_seconds
        self._policy = flow.replication_policy()
        self._topic_filter = flow.topic_filter()
        self._config_filter = flow.config_property_filter()
        self._heartbeats = flow.settings.source.heartbeats_replication_enabled
        self._replication_factor = flow.settings.source.replication_factor
        self._routes: dict[str, Route] = {}
        self._discovered: dict[tuple[str, int], float] = {}  # (remote, partitions) -> first seen
        self._applied_configs: dict[str, tuple[ConfigOp, ...]] = {}
        self._configs_reset = -math.inf
        self._once = OnceLog(flow.name, log)
        self._acls = AclSync(
            flow,
            source,
            target,
            self._once,
            replicated=self.should_replicate_topic,
            remote_topic=self.remote_topic,
            clock=clock,
            resync_seconds=resync_seconds,
            recheck_seconds=acl_recheck_seconds,
        )
        self._limits: dict[str, int] = {}  # remote topic -> its max.message.bytes, as described
        self._limits_asked: dict[str, float] = {}  # when each was last asked for (not found)

    # -- naming --
    def remote_topic(self, topic: str) -> str:
        return self._policy.format_remote_topic(self.flow.source, topic)

    def should_replicate_topic(self, topic: str) -> bool:
        return should_replicate_topic(
            topic,
            policy=self._policy,
            topic_filter=self._topic_filter,
            target_alias=self.flow.target,
            heartbeats_replication=self._heartbeats,
        )

    @property
    def routes(self) -> Mapping[str, Route]:
        """The routes of the last refresh."""
        return dict(self._routes)

    # -- topics and partitions --
    def refresh_topics(self) -> dict[str, Route]:
        """Create missing remote topics, add partitions, and return the routes ready now.

        Per-topic failures are logged (once) and retried next time; KafkaClientError is raised
        only when a cluster cannot be listed at all (retriable during an outage).
        """
        source = {
            t: n for t, n in self._source.list_topics().items() if self.should_replicate_topic(t)
        }
        plan = plan_topics(source, self._target.list_topics(), self.remote_topic)
        now = self._clock()
        pending = {(self.remote_topic(t), n) for t, n in plan.create.items()}
        pending |= set(plan.increase.items())
        for key in pending:
            self._discovered.setdefault(key, now)
        asked, created = self._create_topics(plan.create)
        if self._add_partitions(plan.increase) or asked:
            # look again, so a topic created now is routed now rather than next time
            plan = self._plan_after_creating(source, created)
        still = {(self.remote_topic(t), n) for t, n in plan.create.items()}
        still |= set(plan.increase.items())
        self._discovered = {k: v for k, v in self._discovered.items() if k in still}
        self._routes = self._with_topic_ids(plan.routes)
        return dict(self._routes)

    def _with_topic_ids(self, routes: Mapping[str, Route]) -> dict[str, Route]:
        """The routes with their source topics' ids: a topic deleted and re-created under
        the same name shows as a new id, and the planner copies it from its start. When the
        source does not answer, the ids known from the last refresh stand."""
        try:
            ids = self._source.topic_ids(routes)
        except KafkaClientError as exc:
            known = {t: r.topic_id for t, r in self._routes.items()}
            ids = self._once.passed_over(exc, "source topic ids not read", known)
        return {t: replace(r, topic_id=ids.get(t, "")) for t, r in routes.items()}

    def _plan_after_creating(self, source: Mapping[str, int], created: set[str]) -> TopicPlan:
        """The plan on a fresh listing of the target. A topic the controller just created
        shows in the brokers' metadata a moment later: wait a little (CREATED_WAIT_S at most)
        for the ones this pass created, so they are routed now and not a refresh interval
        later (that was two of the seconds from a new source topic to its first record)."""
        deadline = time.monotonic() + CREATED_WAIT_S
        while True:
            plan = plan_topics(source, self._target.list_topics(), self.remote_topic)
            unlisted = created & {self.remote_topic(t) for t in plan.create}
            if not unlisted or time.monotonic() >= deadline:
                return plan
            time.sleep(0.1)

    def _since_discovery(self, remote: str, partitions: int) -> float:
        return self._clock() - self._discovered.get((remote, partitions), self._clock())

    def _create_topics(self, create: Mapping[str, int]) -> tuple[bool, set[str]]:
        """Whether CreateTopics was sent, and the remote topics it created."""
        if not create:
            return False, set()
        try:
            described = self._source.describe_topic_configs(create)
        except KafkaClientError as exc:
            return self._once.failed(
                exc, "describe-configs", "cannot read configs of new source topics", (False, set())
            )
        specs = [
            NewTopicSpec(
                self.remote_topic(topic),
                partitions,
                self._replication_factor,
                new_topic_configs(described[topic], self._config_filter),
            )
            for topic, partitions in create.items()
            if topic in described  # gone from the source meanwhile
        ]
        try:
            results = self._target.create_topics(specs)
        except KafkaClientError as exc:
            return self._once.failed(
                exc, "create-topics", "creating remote topics failed", (False, set())
            )
        created: list[tuple[str, int, float]] = []
        failed: dict[str, str] = {}
        for spec in specs:
            outcome = results.get(spec.name)
            if isinstance(outcome, KafkaClientError):
                failed[spec.name] = str(outcome)
                continue
            self._once.forget(f"create:{spec.name}")
            if outcome == "created":
                waited = self._since_discovery(spec.name, spec.partitions)
                created.append((spec.name, spec.partitions, waited))
        self._once.warn_each("create", "could not create remote topic", failed)
        self._log_changes("created remote topic", "created", created)
        return bool(specs), {name for name, _, _ in created}

    def _log_changes(self, one: str, many: str, changes: list[tuple[str, int, float]]) -> None:
        """A line per topic for a few; one summary line for a pass that changed many (the first
        pass over a thousand source topics), with each topic at DEBUG."""
        if len(changes) <= DETAILED_CHANGES:
            for topic, partitions, waited in changes:
                log.info(
                    "%s: %s %s on %s with %d partitions, %.1fs after discovery",
                    self.flow.name,
                    one,
                    topic,
                    self.flow.target,
                    partitions,
                    waited,
                )
            return
        for topic, partitions, _ in changes:
            log.debug("%s: %s %s with %d partitions", self.flow.name, one, topic, partitions)
        names = [topic for topic, _, _ in changes]
        shown = ", ".join(names[:DETAILED_CHANGES])
        waits = [waited for _, _, waited in changes]
        log.info(
            "%s: %s %d remote topics on %s (%d partitions in all), %.1f to %.1fs after "
            "discovery: %s and %d more",
            self.flow.name,
            many,
            len(changes),
            self.flow.target,
            sum(partitions for _, partitions, _ in changes),
            min(waits),
            max(waits),
            shown,
            len(changes) - DETAILED_CHANGES,
        )

    def _add_partitions(self, increase: Mapping[str, int]) -> bool:
        if not increase:
            return False
        try:
            failures = self._target.increase_partitions(increase)
        except KafkaClientError as exc:
            return self._once.failed(exc, "create-partitions", "adding partitions failed", False)
        grown: list[tuple[str, int, float]] = []
        self._once.warn_each(
            "grow",
            "could not add partitions to",
            {r: str(failures[r]) for r in increase if r in failures},
        )
        for remote, count in increase.items():
            if remote in failures:
                continue
            self._once.forget(f"grow:{remote}")
            grown.append((remote, count, self._since_discovery(remote, count)))
        self._log_changes("grew remote topic", "grew", grown)
        return True

    # -- configs --
    def max_message_bytes(self, remotes: Iterable[str]) -> dict[str, int]:
        """The largest record batch each remote topic accepts (its max.message.bytes), read
        once per topic and again after the config sync changed it; a topic not found yet (or
        the target unreachable) is left out, and its batches keep librdkafka's bound."""
        now = self._clock()
        missing = sorted(
            r
            for r in set(remotes) - self._limits.keys()
            if now - self._limits_asked.get(r, -math.inf) >= LIMITS_RETRY_S
        )
        self._limits_asked.update(dict.fromkeys(missing, now))
        if missing:
            try:
                described = self._target.describe_topic_configs(missing)
            except KafkaClientError as exc:
                what = "cannot read remote topics' max.message.bytes"
                described = self._once.passed_over(exc, what, {})
            for remote, entries in described.items():
                for entry in entries:
                    if entry.name == "max.message.bytes" and entry.value:
                        self._limits[remote] = int(entry.value)
        return {r: self._limits[r] for r in remotes if r in self._limits}

    def sync_configs(self) -> int:
        """IncrementalAlterConfigs for routed topics whose wanted configs changed; the count."""
        routes = dict(self._routes)
        if not routes:
            return 0
        now = self._clock()
        if now - self._configs_reset >= self._resync:
            self._applied_configs.clear()
            self._configs_reset = now
        try:
            described = self._source.describe_topic_configs(routes)
        except KafkaClientError as exc:
            return self._once.failed(exc, "sync-configs", "cannot read source topic configs", 0)
        wanted = {
            routes[topic].target_topic: config_ops(entries, self._config_filter)
            for topic, entries in described.items()
        }
        self._applied_configs = {k: v for k, v in self._applied_configs.items() if k in wanted}
        changed = {r: ops for r, ops in wanted.items() if self._applied_configs.get(r) != ops}
        if not changed:
            return 0
        try:
            failures = self._target.incremental_alter_configs(changed)
        except KafkaClientError as exc:
            return self._once.failed(exc, "sync-configs", "altering remote topic configs failed", 0)
        self._once.forget("sync-configs")
        for remote, ops in changed.items():
            if remote in failures:
                self._once.warn(f"configs:{remote}", f"config sync failed: {failures[remote]}")
                continue
            self._once.forget(f"configs:{remote}")
            self._limits.pop(remote, None)  # read again when next asked
            self._limits_asked.pop(remote, None)
            before = self._applied_configs.get(remote)
            if before is not None:
                diff = sorted({o.name for o in set(ops) ^ set(before)})
                log.info("%s: synced %s on %s", self.flow.name, ", ".join(diff), remote)
            self._applied_configs[remote] = ops
        done = len(changed) - len(failures)
        log.debug("%s: synced configs of %d remote topics", self.flow.name, done)
        return done

    # -- ACLs --
    def sync_acls(self) -> int:
        """Create the target's topic ACLs derived from the source's; never deletes. The count."""
        return self._acls.sync()
