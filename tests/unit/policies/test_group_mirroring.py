"""group.mirroring.policy.class (KIP-1378's key): the name a source group has on the target."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from mm2.config import load_properties, parse_properties
from mm2.connectors.group_sync import GroupSync
from mm2.policies.group_mirroring import (
    GroupMirroringPolicy,
    IdentityGroupMirroringPolicy,
    load_group_mirroring_policy,
)
from mm2.policies.replication import PolicyConfigError
from tests.unit.connectors.test_group_sync import TP, Groups, checkpoints, empty


class Prefixed(GroupMirroringPolicy):
    """`<source>-<group>` on the target, or `<prefix><group>` with `group.prefix` set."""

    def configure(self, props: Mapping[str, str]) -> None:
        self.prefix = props.get("group.prefix", "")

    def target_group(self, source_alias: str, group: str) -> str:
        return f"{self.prefix or source_alias + '-'}{group}"


NAME = f"{__name__}.Prefixed"


def test_the_default_keeps_every_name_and_a_python_class_is_named_by_its_path() -> None:
    assert isinstance(load_group_mirroring_policy({}), IdentityGroupMirroringPolicy)
    assert load_group_mirroring_policy({}).target_group("primary", "app") == "app"
    policy = load_group_mirroring_policy({"group.mirroring.policy.class": NAME})
    assert policy.target_group("primary", "app") == "primary-app"
    configured = {"group.mirroring.policy.class": NAME, "group.prefix": "dr."}
    assert load_group_mirroring_policy(configured).target_group("primary", "app") == "dr.app"


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("org.example.RenamingPolicy", "a Java class cannot run here"),
        ("nowhere.Policy", "cannot import it"),
        ("mm2.policies.replication.DefaultReplicationPolicy", "not a subclass"),
    ],
)
def test_a_policy_that_cannot_be_built_names_the_key_and_why(name: str, said: str) -> None:
    with pytest.raises(PolicyConfigError) as raised:
        load_group_mirroring_policy({"group.mirroring.policy.class": name})
    assert raised.value.key == "group.mirroring.policy.class" and said in str(raised.value)


def test_a_flow_reads_the_key_as_a_checkpoint_setting() -> None:
    text = (
        "clusters = primary, backup\nprimary.bootstrap.servers = a:1\n"
        "backup.bootstrap.servers = b:1\nprimary->backup.enabled = true\n"
        f"primary->backup.group.mirroring.policy.class = {NAME}\n"
    )
    config = load_properties(parse_properties(text, "mm2.properties"))
    assert not [w for w in config.warnings if "group.mirroring" in w]  # a known key
    flow = config.flow("primary", "backup")
    assert flow.group_mirroring_policy().target_group("primary", "app") == "primary-app"


def test_the_sync_writes_into_the_renamed_group() -> None:
    groups = Groups([empty()])
    GroupSync(
        groups, flow="primary->backup", target="backup", rename=lambda g: f"primary-{g}"
    ).sync(checkpoints(100))
    assert groups.written_to == ["primary-app"] and groups.writes == [100]
    assert TP in groups.committed
