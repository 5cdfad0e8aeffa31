"""ACL bindings as plain values, and their translation to and from confluent-kafka's types."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, cast

from confluent_kafka.admin._acl import AclBinding as KafkaAclBinding
from confluent_kafka.admin._acl import AclBindingFilter, AclOperation, AclPermissionType
from confluent_kafka.admin._resource import ResourcePatternType, ResourceType

__all__ = [
    "AclBinding",
    "AclOperationName",
    "AclPermission",
    "PatternTypeName",
    "ResourceTypeName",
    "from_kafka",
    "to_kafka",
    "topic_acl_filter",
]

ResourceTypeName = Literal["UNKNOWN", "ANY", "TOPIC", "GROUP", "BROKER", "TRANSACTIONAL_ID"]
PatternTypeName = Literal["UNKNOWN", "ANY", "MATCH", "LITERAL", "PREFIXED"]
AclOperationName = Literal[
    "UNKNOWN",
    "ANY",
    "ALL",
    "READ",
    "WRITE",
    "CREATE",
    "DELETE",
    "ALTER",
    "DESCRIBE",
    "CLUSTER_ACTION",
    "DESCRIBE_CONFIGS",
    "ALTER_CONFIGS",
    "IDEMPOTENT_WRITE",
]
AclPermission = Literal["UNKNOWN", "ANY", "DENY", "ALLOW"]


@dataclass(frozen=True)
class AclBinding:
    """One ACL: a resource pattern and an access-control entry, in Kafka's own names."""

    resource_type: ResourceTypeName
    name: str
    pattern_type: PatternTypeName
    principal: str
    host: str
    operation: AclOperationName
    permission: AclPermission


def _name(value: object) -> str:
    # confluent-kafka hands back enums; older builds may hand back their ints.
    return str(getattr(value, "name", value))


def from_kafka(binding: KafkaAclBinding) -> AclBinding:
    """Our value for a binding confluent-kafka returned."""
    return AclBinding(
        resource_type=cast(ResourceTypeName, _name(binding.restype)),
        name=binding.name,
        pattern_type=cast(PatternTypeName, _name(binding.resource_pattern_type)),
        principal=binding.principal,
        host=binding.host,
        operation=cast(AclOperationName, _name(binding.operation)),
        permission=cast(AclPermission, _name(binding.permission_type)),
    )


def to_kafka(binding: AclBinding) -> KafkaAclBinding:
    """confluent-kafka's binding for one of ours (to create it)."""
    return KafkaAclBinding(
        ResourceType[binding.resource_type],
        binding.name,
        ResourcePatternType[binding.pattern_type],
        binding.principal,
        binding.host,
        AclOperation[binding.operation],
        AclPermissionType[binding.permission],
    )


def topic_acl_filter() -> AclBindingFilter:
    """Every ACL on any topic, any pattern (Apache's ANY_TOPIC_ACL)."""
    # None matches any name, principal and host; the stub types those as plain str.
    anything = cast(str, None)
    return AclBindingFilter(
        ResourceType.TOPIC,
        anything,
        ResourcePatternType.ANY,
        anything,
        anything,
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
