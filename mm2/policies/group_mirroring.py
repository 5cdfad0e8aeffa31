"""group.mirroring.policy.class (KIP-1378's key): the name a source group has on the target.

The checkpoint connector writes a group's translated offsets, and `mm2 failover` commits them,
to the group this policy names on the target; checkpoints keep the source group's name, as
Apache's RemoteClusterUtils reads them. The default keeps every name. A policy is a Python class
named by its dotted path, as replication policies are.
"""

from __future__ import annotations

from collections.abc import Mapping

from mm2.policies.replication import load_class

__all__ = [
    "GROUP_MIRRORING_POLICY_CLASS",
    "GroupMirroringPolicy",
    "IdentityGroupMirroringPolicy",
    "load_group_mirroring_policy",
]

GROUP_MIRRORING_POLICY_CLASS = "group.mirroring.policy.class"


class GroupMirroringPolicy:
    """Names a source group on the target; subclass it and override `target_group`."""

    def configure(self, props: Mapping[str, str]) -> None:
        """The flow's checkpoint connector settings, for a policy that reads its own keys."""

    def target_group(self, source_alias: str, group: str) -> str:
        """The group on the target that takes `group`'s offsets from cluster `source_alias`."""
        raise NotImplementedError


class IdentityGroupMirroringPolicy(GroupMirroringPolicy):
    """The same name on both clusters (Apache MM2's behaviour, and the default)."""

    def target_group(self, source_alias: str, group: str) -> str:
        return group


_BUILTIN = {
    "",
    "IdentityGroupMirroringPolicy",
    "org.apache.kafka.connect.mirror.IdentityGroupMirroringPolicy",
    "mm2.policies.group_mirroring.IdentityGroupMirroringPolicy",
}


def load_group_mirroring_policy(props: Mapping[str, str]) -> GroupMirroringPolicy:
    """The configured policy, configured with `props`; identity when none is named."""
    name = props.get(GROUP_MIRRORING_POLICY_CLASS, "").strip()
    if name in _BUILTIN:
        policy: GroupMirroringPolicy = IdentityGroupMirroringPolicy()
    else:
        cls = load_class(name, GROUP_MIRRORING_POLICY_CLASS, GroupMirroringPolicy)
        assert issubclass(cls, GroupMirroringPolicy)  # load_class checked it
        policy = cls()
    policy.configure(props)
    return policy
