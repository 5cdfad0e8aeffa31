"""ReplicationPolicy: how remote topics and MM2's internal topics are named (Apache's rules)."""

from __future__ import annotations

import importlib
import re
from abc import ABC, abstractmethod
from collections.abc import Mapping

__all__ = [
    "DEFAULT_POLICY_CLASS",
    "DefaultReplicationPolicy",
    "IdentityReplicationPolicy",
    "PolicyConfigError",
    "ReplicationPolicy",
    "is_cycle",
    "load_replication_policy",
]

SEPARATOR = "replication.policy.separator"
INTERNAL_SEPARATOR_ENABLED = "replication.policy.internal.topic.separator.enabled"
SOURCE_CLUSTER_ALIAS = "source.cluster.alias"
POLICY_CLASS = "replication.policy.class"


class PolicyConfigError(ValueError):
    """A policy or filter setting that cannot mean anything; `key` names the setting."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key
        self.detail = message


class ReplicationPolicy(ABC):
    """Naming of remote and internal topics; subclass it for a custom policy.

    >>> p = DefaultReplicationPolicy()
    >>> p.format_remote_topic("primary", "orders")
    'primary.orders'
    >>> p.topic_source("primary.orders"), p.upstream_topic("primary.orders")
    ('primary', 'orders')
    """

    def configure(self, props: Mapping[str, str]) -> None:  # noqa: B027 - optional hook
        """Read settings (the connector's string map); the default policy reads the separator."""

    @abstractmethod
    def format_remote_topic(self, source_cluster_alias: str, topic: str) -> str: ...

    @abstractmethod
    def topic_source(self, topic: str) -> str | None: ...

    @abstractmethod
    def upstream_topic(self, topic: str) -> str | None: ...

    def original_topic(self, topic: str) -> str:
        upstream = self.upstream_topic(topic)
        if upstream is None or upstream == topic:
            return topic
        return self.original_topic(upstream)

    def heartbeats_topic(self) -> str:
        return "heartbeats"

    def offset_syncs_topic(self, cluster_alias: str) -> str:
        return f"mm2-offset-syncs.{cluster_alias}.internal"

    def checkpoints_topic(self, cluster_alias: str) -> str:
        return f"{cluster_alias}.checkpoints.internal"

    def is_heartbeats_topic(self, topic: str) -> bool:
        return self.heartbeats_topic() == self.original_topic(topic)

    def is_checkpoints_topic(self, topic: str) -> bool:
        return topic.endswith(".checkpoints.internal")

    def is_mm2_internal_topic(self, topic: str) -> bool:
        return topic.endswith(".internal")

    def is_internal_topic(self, topic: str) -> bool:
        return (
            self.is_mm2_internal_topic(topic)
            or topic.startswith(("__", "."))
            or topic.endswith(("-internal", ".internal"))
        )


def _java_split(text: str, separator: str) -> list[str]:
    # Java String.split(regex) drops trailing empty strings but keeps a leading empty one, except
    # where the match is empty: an empty separator splits between every character, so a topic of
    # two characters or more is "remote" and its first character is the "source" (Apache's own
    # result with `replication.policy.separator =`).
    if separator == "":
        return list(text)
    parts = re.split(re.escape(separator), text)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


class DefaultReplicationPolicy(ReplicationPolicy):
    """`<source><sep><topic>`; the separator (default `.`) may also shape internal topic names.

    An empty separator is Apache's too: with an empty `source.cluster.alias` it keeps topic
    names (`"" + "" + "orders"`), the way older mm2.properties files avoid the prefix.
    """

    def __init__(self, separator: str = ".", internal_separator_enabled: bool = True) -> None:
        self.separator = separator
        self.internal_separator = separator if internal_separator_enabled else "."

    def configure(self, props: Mapping[str, str]) -> None:
        if SEPARATOR in props:
            self.separator = props[SEPARATOR]
            # Apache reads the flag only when a separator is given.
            flag = props.get(INTERNAL_SEPARATOR_ENABLED, "true").strip().lower()
            if flag not in ("true", "false"):
                raise PolicyConfigError(
                    INTERNAL_SEPARATOR_ENABLED, f"{flag!r} is not a boolean; use true or false"
                )
            self.internal_separator = self.separator if flag == "true" else "."

    def format_remote_topic(self, source_cluster_alias: str, topic: str) -> str:
        return f"{source_cluster_alias}{self.separator}{topic}"

    def topic_source(self, topic: str) -> str | None:
        parts = _java_split(topic, self.separator)
        return parts[0] if len(parts) >= 2 else None

    def upstream_topic(self, topic: str) -> str | None:
        source = self.topic_source(topic)
        if source is None:
            return None
        return topic[len(source) + len(self.separator) :]

    def offset_syncs_topic(self, cluster_alias: str) -> str:
        sep = self.internal_separator
        return f"mm2-offset-syncs{sep}{cluster_alias}{sep}internal"

    def checkpoints_topic(self, cluster_alias: str) -> str:
        sep = self.internal_separator
        return f"{cluster_alias}{sep}checkpoints{sep}internal"

    def is_checkpoints_topic(self, topic: str) -> bool:
        sep = self.internal_separator
        return topic.endswith(f"{sep}checkpoints{sep}internal")

    def is_mm2_internal_topic(self, topic: str) -> bool:
        return topic.endswith(f"{self.internal_separator}internal")


class IdentityReplicationPolicy(DefaultReplicationPolicy):
    """Remote topics keep their names; only heartbeats are prefixed, so cycles stay detectable."""

    def __init__(self, source_cluster_alias: str | None = None) -> None:
        super().__init__()
        self.source_cluster_alias = source_cluster_alias

    def configure(self, props: Mapping[str, str]) -> None:
        super().configure(props)
        self.source_cluster_alias = props.get(SOURCE_CLUSTER_ALIAS, self.source_cluster_alias)

    @staticmethod
    def _looks_like_heartbeats(topic: str) -> bool:
        return topic.endswith("heartbeats")

    def format_remote_topic(self, source_cluster_alias: str, topic: str) -> str:
        if self._looks_like_heartbeats(topic):
            return super().format_remote_topic(source_cluster_alias, topic)
        return topic

    def topic_source(self, topic: str) -> str | None:
        if self._looks_like_heartbeats(topic):
            return super().topic_source(topic)
        return self.source_cluster_alias

    def upstream_topic(self, topic: str) -> str | None:
        if self._looks_like_heartbeats(topic):
            return super().upstream_topic(topic)
        return topic


def is_cycle(policy: ReplicationPolicy, topic: str, target_cluster_alias: str) -> bool:
    """True when `topic` already came from the target: replicating it there would loop."""
    source = policy.topic_source(topic)
    if source is None:
        return False
    if source == target_cluster_alias:
        return True
    upstream = policy.upstream_topic(topic)
    if upstream is None or upstream == topic:
        return False  # Identity: the chain ends here, nothing more to learn
    return is_cycle(policy, upstream, target_cluster_alias)


_JAVA = "org.apache.kafka.connect.mirror."
DEFAULT_POLICY_CLASS = _JAVA + "DefaultReplicationPolicy"
ALIASES: dict[str, type[ReplicationPolicy]] = {
    _JAVA + "DefaultReplicationPolicy": DefaultReplicationPolicy,
    _JAVA + "IdentityReplicationPolicy": IdentityReplicationPolicy,
    "DefaultReplicationPolicy": DefaultReplicationPolicy,
    "IdentityReplicationPolicy": IdentityReplicationPolicy,
    # The Python paths of releases before the package moved under mm2 (files written for them
    # keep working).
    "policies.replication.DefaultReplicationPolicy": DefaultReplicationPolicy,
    "policies.replication.IdentityReplicationPolicy": IdentityReplicationPolicy,
}


def load_class(name: str, key: str, base: type[object]) -> type[object]:
    """Import `package.module.Class` and check it subclasses `base`; errors name `key`."""
    module_name, _, attr = name.strip().rpartition(".")
    if not module_name:
        raise PolicyConfigError(key, f"{name!r} is not a dotted path like package.module.Class")
    try:
        module = importlib.import_module(module_name)
        cls = getattr(module, attr)
    except (ImportError, AttributeError) as exc:
        if module_name.startswith(("org.", "com.", "io.")):
            reason = "a Java class cannot run here; name a Python class by its dotted path"
        else:
            reason = f"cannot import it ({exc})"
        raise PolicyConfigError(key, f"{name!r}: {reason}") from None
    if not (isinstance(cls, type) and issubclass(cls, base)):
        raise PolicyConfigError(key, f"{name!r} is not a subclass of {base.__name__}")
    return cls


def load_replication_policy(props: Mapping[str, str]) -> ReplicationPolicy:
    """The configured policy (Java names of the built-ins accepted), configured with `props`."""
    name = props.get(POLICY_CLASS, "").strip() or DEFAULT_POLICY_CLASS
    cls = ALIASES.get(name)
    if cls is None:
        loaded = load_class(name, POLICY_CLASS, ReplicationPolicy)
        assert issubclass(loaded, ReplicationPolicy)  # load_class checked it
        cls = loaded
    policy = cls()
    policy.configure(props)
    return policy
