"""Connections a real `neardup serve` holds (server.py, serve: raise_fd_limit, connection_limit,
GRACEFUL_SHUTDOWN). uvicorn has no time limit on a request's headers or body: each partial
request holds a descriptor until the client closes it. The server raises its soft limit on open
files (within the hard one), answers 503 past a number of connections derived from it, and
cuts off what is still running 10 s into a shutdown (it waited 30 s)."""

import resource
import time

import httpx
import pytest
from srv_helpers import Server, partial_requests, soft_fd_limit


def _limits(soft, hard):
    return lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@pytest.fixture
def many_files():
    """This process may open ~1,200 sockets (restored after)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 4096:
        pytest.skip(f"the hard limit on open files is {hard}")
    if soft != resource.RLIM_INFINITY and soft < 2048:
        resource.setrlimit(resource.RLIMIT_NOFILE, (2048, hard))
    yield
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_a_low_soft_limit_is_raised_so_partial_requests_do_not_starve_the_server(index_dir, many_files):
    # a systemd service's default: 1,024 soft (the server's fd limit ran out at ~1,000 partial
    # requests: /v1/health was reset)
    srv = Server(index_dir, preexec_fn=_limits(1024, 4096))
    socks = []
    try:
        assert soft_fd_limit(srv.proc.pid) == 4096
        socks = partial_requests(srv.port, 1100)
        time.sleep(0.5)
        r = httpx.get(srv.url + "/v1/health", timeout=10)
        assert r.status_code == 200 and r.json()["writer"]["alive"]
        r = httpx.post(srv.url + "/v1/documents", json={"id": "a", "text": "some words of an article"}, timeout=30)
        assert r.status_code == 200, r.text
    finally:
        for s in socks:
            s.close()
        srv.stop()


def test_past_the_connection_limit_a_request_gets_503_and_shutdown_is_bounded(index_dir):
    # 256 files, no more to be had: limit_concurrency is a quarter of it (64)
    srv = Server(index_dir, preexec_fn=_limits(256, 256))
    socks = []
    try:
        socks = partial_requests(srv.port, 70)
        time.sleep(0.5)
        r = httpx.get(srv.url + "/v1/health", timeout=10)
        assert r.status_code == 503 and r.text == "Service Unavailable"  # uvicorn's, at once
        for s in socks:
            s.close()
        socks = []
        time.sleep(0.5)
        assert httpx.get(srv.url + "/v1/health", timeout=10).status_code == 200
        # a body that never comes holds its request until the shutdown's graceful timeout
        took = srv.shutdown_with_a_body_pending()
        assert 9 < took < 20, took  # GRACEFUL_SHUTDOWN (10 s), was 30
    finally:
        for s in socks:
            s.close()
        srv.stop()
