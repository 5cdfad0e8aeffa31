"""TopicAdmin: one cluster's topics, partitions, topic configs and topic ACLs, in batched calls."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, TypeVar, cast

from confluent_kafka import KafkaError, KafkaException, TopicCollection
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._config import (
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
)
from confluent_kafka.admin._resource import ResourceType
from confluent_kafka.cimpl import NewPartitions, NewTopic

from mm2.errors import KafkaClientError
from mm2.kafka.acls import AclBinding, from_kafka, to_kafka, topic_acl_filter
from mm2.kafka.failure import ClientWatch, error_code

__all__ = [
    "BROKER_INTERNAL_TOPICS",
    "ConfigOp",
    "ConfigOpType",
    "ConfigSourceName",
    "CreateOutcome",
    "NewTopicSpec",
    "TopicAdmin",
    "TopicConfigEntry",
]

ConfigSourceName = Literal[
    "UNKNOWN_CONFIG",
    "DYNAMIC_TOPIC_CONFIG",
    "DYNAMIC_BROKER_CONFIG",
    "DYNAMIC_DEFAULT_BROKER_CONFIG",
    "STATIC_BROKER_CONFIG",
    "DEFAULT_CONFIG",
    "GROUP_CONFIG",
]
ConfigOpType = Literal["SET", "DELETE"]
CreateOutcome = Literal["created", "exists"]

# Kafka's Topic.isInternal: the topics the broker itself owns (metadata carries no flag for it).
BROKER_INTERNAL_TOPICS = frozenset(
    {"__consumer_offsets", "__transaction_state", "__share_group_state"}
)

# MirrorUtils.createCompactedTopic treats these as "nothing to do".
_COMPACTED_TOLERATED = {
    KafkaError.TOPIC_ALREADY_EXISTS,
    KafkaError.UNSUPPORTED_VERSION,
    KafkaError.TOPIC_AUTHORIZATION_FAILED,
    KafkaError.CLUSTER_AUTHORIZATION_FAILED,
}
_T = TypeVar("_T")
_K = TypeVar("_K")


@dataclass(frozen=True)
class TopicConfigEntry:
    """One topic config as DescribeConfigs reports it; `is_default` means DEFAULT_CONFIG."""

    name: str
    value: str | None
    is_default: bool = False
    is_read_only: bool = False
    is_sensitive: bool = False
    source: ConfigSourceName = "UNKNOWN_CONFIG"


@dataclass(frozen=True)
class NewTopicSpec:
    """A topic to create; replication_factor -1 means the broker's default."""

    name: str
    partitions: int
    replication_factor: int = -1
    configs: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ConfigOp:
    """One IncrementalAlterConfigs operation; DELETE falls back to the cluster's default."""

    name: str
    op: ConfigOpType
    value: str | None = None


def _source_name(value: object) -> ConfigSourceName:
    try:
        return cast(ConfigSourceName, ConfigSource(getattr(value, "value", value)).name)
    except ValueError:
        return "UNKNOWN_CONFIG"


class TopicAdmin:
    """Topic metadata calls to one cluster over one long-lived AdminClient.

    Every method sends one request for all the topics it is given. Calls that fail as a whole
    raise KafkaClientError (with `retriable`, see mm2.kafka.failure); per-topic failures are
    returned by topic name. Errors name the cluster (its alias when `config` is a ClientConfig).
    """

    def __init__(self, config: Mapping[str, str], *, timeout: float = 30.0) -> None:
        self._watch = ClientWatch(config, window_s=timeout + 60)
        self._admin = AdminClient(self._watch.settings())
        self._watch.serve_with(self._admin.poll)
        self._timeout = timeout
        self.bootstrap_servers = config.get("bootstrap.servers", "")
        self.cluster = self._watch.cluster

    def _error(self, what: str, exc: BaseException) -> KafkaClientError:
        return self._watch.error(what, exc)

    def _wait(self, future: concurrent.futures.Future[_T]) -> _T:
        # A margin over the request timeout, so librdkafka reports its own timeout first.
        return future.result(timeout=self._timeout + 5)

    def _answers(
        self, futures: Mapping[_K, concurrent.futures.Future[_T]]
    ) -> Iterator[tuple[_K, _T | KafkaException | concurrent.futures.TimeoutError]]:
        """Each request's key with its result, or with the exception it failed with."""
        for key, future in futures.items():
            try:
                yield key, self._wait(future)
            except (KafkaException, concurrent.futures.TimeoutError) as exc:
                yield key, exc

    def _failures(
        self, futures: Mapping[_K, concurrent.futures.Future[_T]], what: Callable[[_K], str]
    ) -> dict[_K, KafkaClientError]:
        """The requests of one call that failed, each as the error of `what(key)`."""
        return {
            key: self._error(what(key), answer)
            for key, answer in self._answers(futures)
            if isinstance(answer, (KafkaException, concurrent.futures.TimeoutError))
        }

    # -- topics and partitions --
    def list_topics(self, *, include_internal: bool = False) -> dict[str, int]:
        """Partition count of every topic (broker-internal ones only when asked)."""
        try:
            metadata = self._admin.list_topics(timeout=self._timeout)
        except KafkaException as exc:
            raise self._error("listing topics", exc) from exc
        return {
            name: len(t.partitions)
            for name, t in metadata.topics.items()
            if t.error is None and (include_internal or name not in BROKER_INTERNAL_TOPICS)
        }

    def topic_ids(self, topics: Iterable[str]) -> dict[str, str]:
        """The id of each topic (DescribeTopics); topics gone or never there are left out."""
        return self.ask_topic_ids(topics)()

    def ask_topic_ids(self, topics: Iterable[str]) -> Callable[[], dict[str, str]]:
        """topic_ids in two steps: the request leaves now, and the call returned waits for its
        answer (raising what topic_ids raises), so that the caller can do something else in
        between."""
        names = sorted(set(topics))
        if not names:
            return dict
        try:
            futures = self._admin.describe_topics(
                TopicCollection(names), request_timeout=self._timeout
            )
        except KafkaException as exc:
            raise self._error("describing topics", exc) from exc

        def answer() -> dict[str, str]:
            described = self._existing(futures, lambda name: f"describing topic {name}")
            return {name: str(d.topic_id) for name, d in described.items()}

        return answer

    def _existing(
        self, futures: Mapping[_K, concurrent.futures.Future[_T]], what: Callable[[_K], str]
    ) -> dict[_K, _T]:
        """Each future's result; a topic that does not exist (any more) is left out."""
        found: dict[_K, _T] = {}
        for key, answer in self._answers(futures):
            if not isinstance(answer, (KafkaException, concurrent.futures.TimeoutError)):
                found[key] = answer
            elif error_code(answer) != KafkaError.UNKNOWN_TOPIC_OR_PART:
                raise self._error(what(key), answer) from answer
        return found

    def create_topics(
        self, specs: Iterable[NewTopicSpec]
    ) -> dict[str, CreateOutcome | KafkaClientError]:
        """Create the topics in one request; an existing topic is reported as "exists"."""
        new = [
            NewTopic(
                s.name,
                num_partitions=s.partitions,
                replication_factor=s.replication_factor,
                config=dict(s.configs),
            )
            for s in specs
        ]
        if not new:
            return {}
        futures: dict[str, concurrent.futures.Future[None]] = {}
        for batch in _batches(new):
            try:
                futures.update(
                    self._admin.create_topics(
                        batch, operation_timeout=self._timeout, request_timeout=self._timeout
                    )
                )
            except KafkaException as exc:
                raise self._error("creating topics", exc) from exc
        results: dict[str, CreateOutcome | KafkaClientError] = {}
        for name, future in futures.items():
            try:
                self._wait(future)
                results[name] = "created"
            except (KafkaException, concurrent.futures.TimeoutError) as exc:
                if error_code(exc) == KafkaError.TOPIC_ALREADY_EXISTS:
                    results[name] = "exists"
                else:
                    results[name] = self._error(f"creating topic {name}", exc)
        return results

    def create_compacted_topic(
        self, name: str, *, replication_factor: int, partitions: int = 1
    ) -> bool:
        """MirrorUtils.createCompactedTopic: True if created; False when it exists or the
        cluster says unsupported/not authorized; KafkaClientError on any other failure."""
        topic = NewTopic(
            name,
            num_partitions=partitions,
            replication_factor=replication_factor,
            config={"cleanup.policy": "compact"},
        )
        try:
            futures = self._admin.create_topics([topic], request_timeout=self._timeout)
            self._wait(futures[name])
        except (KafkaException, concurrent.futures.TimeoutError) as exc:
            if error_code(exc) in _COMPACTED_TOLERATED:
                return False
            raise self._error(
                f"creating internal topic {name} (replication factor {replication_factor}; on a "
                "cluster with fewer brokers, set the matching *.topic.replication.factor)",
                exc,
            ) from exc
        return True

    def increase_partitions(self, counts: Mapping[str, int]) -> dict[str, KafkaClientError]:
        """Grow each topic to the given count; failures by topic. Apache swallows
        InvalidPartitions (the topic already has that many), and so do we."""
        if not counts:
            return {}
        request = [NewPartitions(topic, n) for topic, n in counts.items()]
        try:
            futures = self._admin.create_partitions(
                request, operation_timeout=self._timeout, request_timeout=self._timeout
            )
        except KafkaException as exc:
            raise self._error("creating partitions", exc) from exc
        failures = self._failures(futures, lambda topic: f"adding partitions to {topic}")
        return {t: e for t, e in failures.items() if e.code != "INVALID_PARTITIONS"}

    # -- topic configs --
    def describe_topic_configs(self, topics: Iterable[str]) -> dict[str, list[TopicConfigEntry]]:
        """Every config entry of each topic; topics that no longer exist are left out."""
        resources = [ConfigResource(ResourceType.TOPIC, t) for t in sorted(set(topics))]
        if not resources:
            return {}
        try:
            futures = self._admin.describe_configs(resources, request_timeout=self._timeout)
        except KafkaException as exc:
            raise self._error("describing topic configs", exc) from exc
        described = self._existing(futures, lambda r: f"describing configs of topic {r.name}")
        return {r.name: [_entry(e) for e in entries.values()] for r, entries in described.items()}

    def incremental_alter_configs(
        self, ops: Mapping[str, Sequence[ConfigOp]]
    ) -> dict[str, KafkaClientError]:
        """Apply SET/DELETE operations to each topic in one request; failures by topic."""
        kinds = {"SET": AlterConfigOpType.SET, "DELETE": AlterConfigOpType.DELETE}
        resources = [
            ConfigResource(
                ResourceType.TOPIC,
                topic,
                incremental_configs=[
                    ConfigEntry(o.name, o.value, incremental_operation=kinds[o.op])
                    for o in topic_ops
                ],
            )
            for topic, topic_ops in ops.items()
            if topic_ops
        ]
        if not resources:
            return {}
        try:
            futures = self._admin.incremental_alter_configs(
                resources, request_timeout=self._timeout
            )
        except KafkaException as exc:
            raise self._error("altering topic configs", exc) from exc
        failures = self._failures(futures, lambda r: f"altering configs of {r.name}")
        return {resource.name: error for resource, error in failures.items()}

    # -- topic ACLs --
    def describe_topic_acls(self) -> list[AclBinding] | None:
        """Every ACL on a topic; None when the cluster has no authorizer (SecurityDisabled).

        librdkafka answers an empty list where the broker said SecurityDisabled, so an empty
        answer is checked against the brokers' `authorizer.class.name`.
        """
        try:
            bindings = self._wait(
                self._admin.describe_acls(topic_acl_filter(), request_timeout=self._timeout)
            )
        except (KafkaException, concurrent.futures.TimeoutError) as exc:
            if error_code(exc) == KafkaError.SECURITY_DISABLED:
                return None
            raise self._error("describing topic ACLs", exc) from exc
        if not bindings and not self.has_authorizer():
            return None
        return [from_kafka(b) for b in bindings]

    def has_authorizer(self) -> bool:
        """Whether a broker of this cluster runs an authorizer (its authorizer.class.name)."""
        try:
            cluster = self._wait(self._admin.describe_cluster(request_timeout=self._timeout))
            if not cluster.nodes:
                raise KafkaClientError("describing the cluster: no broker", retriable=True)
            broker = ConfigResource(ResourceType.BROKER, str(cluster.nodes[0].id))
            futures = self._admin.describe_configs([broker], request_timeout=self._timeout)
            entries = self._wait(futures[broker])
        except (KafkaException, concurrent.futures.TimeoutError) as exc:
            raise self._error("describing the broker's authorizer", exc) from exc
        entry = entries.get("authorizer.class.name")
        return entry is not None and bool((entry.value or "").strip())

    def create_acls(self, bindings: Sequence[AclBinding]) -> dict[AclBinding, KafkaClientError]:
        """Create the bindings in one request (existing ones are a no-op); failures by binding.

        A cluster without an authorizer fails every binding with SecurityDisabled
        (not retriable)."""
        unique = list(dict.fromkeys(bindings))
        if not unique:
            return {}
        by_kafka = {to_kafka(b): b for b in unique}
        try:
            futures = self._admin.create_acls(list(by_kafka), request_timeout=self._timeout)
        except KafkaException as exc:
            raise self._error("creating ACLs", exc) from exc
        failures = self._failures(futures, lambda k: f"creating ACL on {by_kafka[k].name}")
        return {by_kafka[k]: error for k, error in failures.items()}


# A KRaft controller refuses a CreateTopics request of more partitions than this
# (max.request.partition.size.limit, 2000 by default): "Excessively large number of
# partitions per request" (POLICY_VIOLATION). Mirroring a thousand topics at once needs several.
_PARTITIONS_PER_REQUEST = 1000


def _batches(topics: Sequence[NewTopic]) -> list[list[NewTopic]]:
    """Topics split into requests of at most _PARTITIONS_PER_REQUEST partitions (a topic with
    more goes alone)."""
    out: list[list[NewTopic]] = []
    size = 0
    for topic in topics:
        count = max(1, topic.num_partitions)
        if out and size + count <= _PARTITIONS_PER_REQUEST:
            out[-1].append(topic)
            size += count
        else:
            out.append([topic])
            size = count
    return out


def _entry(entry: ConfigEntry) -> TopicConfigEntry:
    source = _source_name(entry.source)
    return TopicConfigEntry(
        name=entry.name,
        value=entry.value,
        # Java's ConfigEntry.isDefault(): the value comes from DEFAULT_CONFIG.
        is_default=source == "DEFAULT_CONFIG" or (source == "UNKNOWN_CONFIG" and entry.is_default),
        is_read_only=entry.is_read_only,
        is_sensitive=entry.is_sensitive,
        source=source,
    )
