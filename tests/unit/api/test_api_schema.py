"""schemathesis against the OpenAPI document, in-process: no 5xx and no schema violations, and
with authentication on, no operation that answers without credentials."""

from __future__ import annotations

import base64
import functools
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    ignored_auth,
    response_schema_conformance,
    status_code_conformance,
)

from mm2.api.app import create_app
from tests.support.api import make_mirror

if TYPE_CHECKING:
    from requests.structures import CaseInsensitiveDict
    from schemathesis.specs.openapi.schemas import OpenApiCase

_STATE = Path(tempfile.mkdtemp(prefix="mm2-schemathesis-"))
_MIRROR = make_mirror(_STATE)
_MIRROR.start()  # fake plugins: threads only, stopped with the interpreter (daemon threads)
schema = schemathesis.openapi.from_asgi("/openapi.json", create_app(_MIRROR))

# The routes that read or change the clusters of a real flow (recovery point, group offsets,
# a group's failover, switchovers) get flows the mirror has: generated names only find 404s.
# Its clusters do not answer, so each call waits for its Kafka timeout: 0.3 s here.
for _name in ("group_offsets", "recovery_point", "failover_group"):
    setattr(_MIRROR.flows, _name, functools.partial(getattr(_MIRROR.flows, _name), timeout=0.3))
_FLOWS = (("primary", "backup"), ("backup", "primary"))
drill_schema = schema.include(
    path_regex=r"^/flows/\{source\}/\{target\}/(recovery-point|groups|switchover)"
)

_AUTH = {"Authorization": "Basic " + base64.b64encode(b"alice:wonderland").decode()}
_SECURED = create_app(_MIRROR, credentials={"alice": "wonderland"})
secured_schema = schemathesis.openapi.from_asgi("/openapi.json", _SECURED, headers=_AUTH)
_CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]
_SETTINGS = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    database=None,
)


@schema.parametrize()
@_SETTINGS
def test_api_conforms_to_its_openapi_document(case: OpenApiCase) -> None:
    case.call_and_validate(checks=_CHECKS)


@drill_schema.parametrize()
@settings(_SETTINGS, max_examples=5)
def test_the_routes_of_a_real_flow_answer_no_500(case: OpenApiCase) -> None:
    """A 4xx for what the request or the clusters' state rules out, 503 for a cluster that does
    not answer (retriable, naming it), never a 500."""
    source, target = _FLOWS[len(str(case.path_parameters)) % 2]
    case.path_parameters = {**(case.path_parameters or {}), "source": source, "target": target}
    response = case.call()
    assert response.status_code != 500, (case.method, case.formatted_path, response.text)
    assert response.status_code < 500 or response.status_code == 503, response.text
    if response.status_code >= 400:
        assert response.json()["error_code"] == response.status_code
    if response.status_code == 503:
        assert "did not answer" in response.json()["message"] or "localhost" in response.text


@secured_schema.parametrize()
@settings(_SETTINGS, max_examples=4)  # the check of credentials does not depend on the input
def test_every_operation_needs_credentials(case: OpenApiCase) -> None:
    """With credentials the API conforms; without, whatever was generated gets 401."""
    case.call_and_validate(headers=_AUTH, checks=[*_CHECKS, ignored_auth])
    anonymous = {k: v for k, v in (case.headers or {}).items() if k.lower() != "authorization"}
    # schemathesis annotates Case.headers as requests' CaseInsensitiveDict, yet reads it as any
    # Mapping[str, Any] (transport/prepare.py): the plain dict set here is what it always was.
    case.headers = cast("CaseInsensitiveDict[Any]", anonymous)
    response = case.call()
    assert response.status_code == 401, (case.method, case.formatted_path, response.text)
