"""REST validation as strict as Connect's: a PUT or POST config is validated in full, and an
offsets PATCH takes Java longs for partitions that exist in topics the connector mirrors."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from mm2.runtime.mirror_maker import MirrorMaker

SOURCE = "primary.backup.MirrorSourceConnector"


# -- PUT and POST validate the whole config --
def test_put_of_an_incomplete_config_is_refused_and_changes_nothing(client: TestClient) -> None:
    before = client.get(f"/connectors/{SOURCE}/config").json()
    empty = client.put(f"/connectors/{SOURCE}/config", json={})
    assert empty.status_code == 400
    assert {"connector.class", "source.cluster.alias"} <= set(empty.json()["errors"])
    no_servers = {k: v for k, v in before.items() if "bootstrap.servers" not in k}
    refused = client.put(f"/connectors/{SOURCE}/config", json=no_servers)
    assert refused.status_code == 400
    assert set(refused.json()["errors"]) == {
        "source.cluster.bootstrap.servers",
        "target.cluster.bootstrap.servers",
    }
    wrong_class = {**before, "connector.class": "MirrorHeartbeatConnector"}
    assert client.put(f"/connectors/{SOURCE}/config", json=wrong_class).status_code == 400
    assert client.get(f"/connectors/{SOURCE}/config").json() == before


def test_post_validates_like_put(client: TestClient, mirror: MirrorMaker) -> None:
    config = mirror.connectors.info(SOURCE).config
    assert client.delete(f"/connectors/{SOURCE}").status_code == 204
    empty = client.post("/connectors", json={"name": SOURCE, "config": {}})
    assert empty.status_code == 400 and "connector.class" in empty.json()["errors"]
    assert client.get(f"/connectors/{SOURCE}").status_code == 404
    assert client.post("/connectors", json={"name": SOURCE, "config": config}).status_code == 201


def test_the_state_dir_of_the_file_is_kept_when_a_put_leaves_it_out(
    client: TestClient, tmp_path: Path
) -> None:
    config = client.get(f"/connectors/{SOURCE}/config").json()
    del config["mm2.state.dir"]
    put = client.put(f"/connectors/{SOURCE}/config", json=config)
    assert put.status_code == 200
    assert put.json()["config"]["mm2.state.dir"] == str(tmp_path / "state")


# -- offsets: Connect's rules, and partitions that exist in topics the connector mirrors --
def entry(topic: str, partition: object, offset: object) -> dict[str, object]:
    return {
        "partition": {"cluster": "primary", "topic": topic, "partition": partition},
        "offset": None if offset is None else {"offset": offset},
    }


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (entry("orders", 0, 10**30), "9223372036854775807"),
        (entry("orders", 0, 2**63), "9223372036854775807"),
        (entry("orders", 0, -2), "out of range"),
        (entry("orders", 0, 1.5), "valid integer"),
        (entry("orders", 0, True), "valid integer"),
        (entry("orders", 0, "7"), "valid integer"),
        (entry("orders", 99, 5), "partition 99 does not exist"),
        (entry("orders", 2**63, 5), "9223372036854775807"),
        (entry("orders-gone", 0, 5), "does not exist on source cluster"),
        (entry("payments", 0, 5), "is not mirrored"),
        (entry("mm2-offsets.primary.internal", 0, 5), "is not mirrored"),
    ],
)
def test_offsets_patch_refuses_what_connect_refuses(
    client: TestClient, change: dict[str, object], reason: str
) -> None:
    assert client.put(f"/connectors/{SOURCE}/stop").status_code == 204
    refused = client.patch(f"/connectors/{SOURCE}/offsets", json={"offsets": [change]})
    assert refused.status_code == 400, refused.text
    assert reason in refused.text
    assert client.get(f"/connectors/{SOURCE}/offsets").json() == {"offsets": []}


def test_offsets_patch_takes_longs_and_deletes_anything(client: TestClient) -> None:
    assert client.put(f"/connectors/{SOURCE}/stop").status_code == 204
    largest = entry("orders", 2, 2**63 - 1)
    assert client.patch(f"/connectors/{SOURCE}/offsets", json={"offsets": [largest]}).is_success
    assert client.get(f"/connectors/{SOURCE}/offsets").json() == {"offsets": [largest]}
    cleanup = {"offsets": [entry("orders", 2, None), entry("orders-gone", 7, None)]}
    assert client.patch(f"/connectors/{SOURCE}/offsets", json=cleanup).is_success
    assert client.get(f"/connectors/{SOURCE}/offsets").json() == {"offsets": []}


def test_a_cluster_that_does_not_answer_is_a_503_naming_it_never_a_500() -> None:
    from mm2.api.errors import status_of
    from mm2.errors import AuthorizationError, KafkaClientError

    assert (
        status_of(KafkaClientError("mm2-offsets.b.internal is not readable", retriable=True)) == 503
    )
    assert status_of(AuthorizationError("describing groups on a: not authorized")) == 502
    assert status_of(RuntimeError("a fault of the server")) == 500


def test_a_missing_topic_is_a_404_and_a_failover_that_cannot_be_done_a_409() -> None:
    from mm2.api.errors import status_of
    from mm2.client.plan import FailoverError
    from mm2.errors import KafkaClientError, TopicNotFoundError

    missing = TopicNotFoundError("mm2-offsets.backup.internal does not exist on primary")
    assert status_of(missing) == 404
    assert isinstance(missing, KafkaClientError) and missing.retriable  # a task waits for it
    assert status_of(FailoverError("group 'g' has no committed offsets on 'primary'")) == 409
