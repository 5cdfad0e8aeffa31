"""schemathesis against the OpenAPI document, in-process: no 5xx and no schema violations."""

from __future__ import annotations

import tempfile
from pathlib import Path

import schemathesis
from api_support import make_mirror
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from api.app import create_app

_STATE = Path(tempfile.mkdtemp(prefix="mm2-schemathesis-"))
_MIRROR = make_mirror(_STATE)
_MIRROR.start()  # fake plugins: threads only, stopped with the interpreter (daemon threads)
schema = schemathesis.openapi.from_asgi("/openapi.json", create_app(_MIRROR))


@schema.parametrize()
@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    database=None,
)
def test_api_conforms_to_its_openapi_document(case: schemathesis.Case) -> None:
    case.call_and_validate(
        checks=[
            not_a_server_error,
            status_code_conformance,
            content_type_conformance,
            response_schema_conformance,
        ]
    )
