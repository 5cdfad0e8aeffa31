"""A running mirror's REST API on real brokers: a change another site's page makes a browser
send is refused and changes nothing, the same change from the mirror's own page is made; the
drill routes answer a 4xx or a 503 naming the cause for ordinary conditions, never a 500.

One mirror process serves every step (module fixture).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from tests.support.kafka import Cluster
from tests.support.mirror import MirrorProcess, free_port, write_properties
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration
SOURCE = "primary.backup.MirrorSourceConnector"
RESTARTING = f"primary->backup|{SOURCE.rsplit('.', 1)[-1]}: restarting"


@dataclass
class Setup:
    api: httpx.Client
    origin: str
    mirror: MirrorProcess

    def restarts(self) -> int:
        return self.mirror.log().count(RESTARTING)


@pytest.fixture(scope="module")
def setup(
    primary: Cluster, backup: Cluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Setup]:
    directory = tmp_path_factory.mktemp("rest-refusals")
    port, dead = free_port(), free_port()
    # `dead` never answers: a flow into it has a cluster that does not answer.
    extra = (
        f"offset.storage.topic = mm2-offsets.{uuid.uuid4().hex[:8]}.internal\n"
        f"listeners = http://127.0.0.1:{port}\n"
        "clusters = primary, backup, dead\n"
        f"dead.bootstrap.servers = 127.0.0.1:{dead}\n"
    )
    topic = f"refusals-{uuid.uuid4().hex[:8]}"
    props = write_properties(
        directory, primary.bootstrap_servers, backup.bootstrap_servers, topic, extra
    )
    origin = f"http://127.0.0.1:{port}"
    api = httpx.Client(base_url=origin, timeout=60)
    mirror = MirrorProcess(props)
    try:
        eventually(
            lambda: _connector_running(api), timeout=180, what=f"{SOURCE} RUNNING", log=mirror.log
        )
        yield Setup(api, origin, mirror)
    finally:
        mirror.stop()
        api.close()


def _connector_running(api: httpx.Client) -> bool:
    try:
        answer = api.get(f"/connectors/{SOURCE}/status")
    except httpx.TransportError:
        return False
    return answer.status_code == 200 and answer.json()["connector"]["state"] == "RUNNING"


def test_a_foreign_form_post_is_refused_and_restarts_nothing(setup: Setup) -> None:
    before = setup.restarts()
    form = {
        "Content-Type": "application/x-www-form-urlencoded",
        "Sec-Fetch-Site": "cross-site",
        "Sec-Fetch-Mode": "navigate",
    }
    for origin in ("https://evil.example", "null"):
        answer = setup.api.post(
            f"/connectors/{SOURCE}/restart", content=b"x=1", headers={**form, "Origin": origin}
        )
        assert answer.status_code == 403, answer.text
        assert answer.json()["error_code"] == 403 and origin in answer.json()["message"]
    # the mirror's own page, with the header, restarts it
    own = {"Origin": setup.origin, "Sec-Fetch-Site": "same-origin", "X-MM2-Request": "1"}
    answer = setup.api.post(f"/connectors/{SOURCE}/restart", headers=own)
    assert answer.status_code == 204, answer.text
    eventually(
        lambda: setup.restarts() == before + 1,
        timeout=60,
        what="one restart in the mirror's log",
        log=setup.mirror.log,
    )
    # curl, as with Apache Kafka Connect: no Origin, no header
    assert setup.api.post(f"/connectors/{SOURCE}/restart").status_code == 204
    eventually(
        lambda: setup.restarts() == before + 2,
        timeout=60,
        what="the second restart in the log",
        log=setup.mirror.log,
    )
    eventually(lambda: _connector_running(setup.api), timeout=120, what=f"{SOURCE} RUNNING again")
    # Each restart fenced the copy tasks it ended, on purpose: no executor ERROR, no trace.
    assert "Exception in task" not in setup.mirror.log(), setup.mirror.log()[-3000:]


def test_the_drill_routes_answer_the_cause_never_a_500(setup: Setup) -> None:
    api = setup.api
    # backup->primary never copied: its offsets topic is not on primary
    answer = api.get("/flows/backup/primary/recovery-point")
    assert answer.status_code == 404, answer.text
    assert "does not exist" in answer.json()["message"]
    # a group with no commits on the source: nothing to fail over
    group = f"no-commits-{uuid.uuid4().hex[:8]}"
    for force in ("false", "true"):
        answer = api.post(f"/flows/primary/backup/groups/{group}/failover?force={force}")
        assert answer.status_code == 409, answer.text
        assert group in answer.json()["message"]
    # primary's groups onto a target that does not answer: none to translate (the target is not
    # asked) or, with groups of other tests on the session's cluster, a 503 naming it
    answer = api.get("/flows/primary/dead/groups/offsets")
    if answer.status_code == 200:
        assert answer.json()["groups"] == [], answer.text
    else:
        assert answer.status_code == 503 and "dead" in answer.json()["message"], answer.text
    # a cluster that does not answer: 503, naming it
    for path in ("/flows/dead/primary/groups/offsets", "/flows/primary/dead/recovery-point"):
        answer = api.get(path)
        assert answer.status_code == 503, (path, answer.text)
        assert "dead" in answer.json()["message"], answer.text
    answer = api.post(f"/flows/primary/dead/groups/{group}/failover")
    assert answer.status_code == 503, answer.text
