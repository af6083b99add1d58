import os
import socket
import subprocess
import sys
import time

import httpx
import pytest

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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, directory, *extra):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen([sys.executable, "-m", "neardup.cli", "serve", str(directory), "--host",
                                      "127.0.0.1", "--port", str(self.port), *extra],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.time() + 30
        while True:
            if self.proc.poll() is not None:
                err = self.proc.stderr.read().decode()
                self.proc.stderr.close()
                raise RuntimeError(f"neardup serve exited with {self.proc.returncode}: {err}")
            try:
                if httpx.get(self.url + "/v1/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.time() > deadline:
                self.stop()
                raise RuntimeError("neardup serve did not start")
            time.sleep(0.1)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stderr.close()


@pytest.fixture
def server(index_dir):
    s = Server(index_dir)
    yield s
    s.stop()
