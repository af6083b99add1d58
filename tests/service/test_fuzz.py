"""Fuzz the API from its own OpenAPI schema (schemathesis): the service never answers 5xx, and
every answer matches the schema (status codes, content types, bodies). A request the schema
allows is accepted, or refused for what a schema cannot say: an id already present (409), or an
article the record check refuses (422 bad_document, naming the field: a publish time that is no
time, a lone surrogate in a text or id; a removal's older_than that is no time)."""

import atexit
import shutil
import tempfile

import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import positive_data_acceptance

from neardup.index import Index
from neardup.service.app import create_app

_dir = tempfile.mkdtemp(prefix="neardup-fuzz-")
atexit.register(shutil.rmtree, _dir, True)
_ix = Index.create(f"{_dir}/ix")
_ix.add([{"id": "seed-1", "text": "heavy rain is likely over coastal karnataka and goa for the next three days"}])
atexit.register(_ix.close)
app = create_app(_ix, max_body=100_000, max_batch=50)
schema = schemathesis.openapi.from_asgi("/openapi.json", app)


@schema.parametrize()
@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
def test_api_from_schema(case):
    response = case.call()
    if _refused_article(case, response):
        case.validate_response(response, excluded_checks=[positive_data_acceptance])
    else:
        case.validate_response(response)


#: what the record check refuses in a schema-valid article, by field
REFUSALS = {
    "published_at": ("as a time", "out of the range of times"),
    "text": ("lone surrogate",),
    "id": ("lone surrogate",),
}


def _refused_article(case, response) -> bool:
    """A POST /v1/documents answered 422 bad_document for one of REFUSALS; a POST /v1/removals
    whose older_than is no time (an ISO 8601 date or time, or an age as 30d: a schema cannot
    say which strings those are)."""
    if case.method == "POST" and case.path == "/v1/removals" and response.status_code == 422:
        e = response.json()["error"]
        return (
            e["code"] == "invalid_request"
            and [d["where"] for d in e.get("details") or []] == ["body.older_than"]
            and (
                "use an age such as" in e["message"]
                or "out of the range" in e["message"]
                or "finite number" in e["message"]
            )
        )
    if case.method != "POST" or case.path != "/v1/documents" or response.status_code != 422:
        return False
    e = response.json()["error"]
    d = e.get("details") or {}
    return e["code"] == "bad_document" and any(r in (d.get("reason") or "") for r in REFUSALS.get(d.get("field"), ()))
