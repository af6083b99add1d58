import pytest
from srv_helpers import Server

from neardup.demo import records as demo_records
from neardup.index import Index


@pytest.fixture
def rain():
    return demo_records()


@pytest.fixture
def index_dir(tmp_path):
    d = tmp_path / "ix"
    Index.create(d, prefer_source=["agency"]).close()
    return d


@pytest.fixture
def client(index_dir):
    from fastapi.testclient import TestClient

    from neardup.service.app import create_app

    with Index.open(index_dir) as ix:
        app = create_app(ix, max_body=200_000, max_batch=500)
        with TestClient(app, raise_server_exceptions=False) as c:
            yield c


@pytest.fixture
def server(index_dir):
    s = Server(index_dir)
    yield s
    s.stop()
