"""Fuzz the API from its own OpenAPI schema (schemathesis): the service never answers 5xx, and
every answer matches the schema (status codes, content types, bodies)."""
import atexit
import shutil
import tempfile

import schemathesis
from hypothesis import HealthCheck, settings

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
    case.call_and_validate()
