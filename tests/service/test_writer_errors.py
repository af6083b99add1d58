"""What a write is answered when the writer cannot do it (problems.py, writer_error; writes.py, written;
worker.py, _settle): a writer process that cannot start again (the index locked by another
process, damaged, gone), and a request cut off by the server's shutdown. Each is a JSON answer
(503, or 500 for a damaged index), not the app's 500 internal_error with a traceback."""

import asyncio
import os
import signal
import time
from concurrent.futures import Future

import httpx
import pytest
from fastapi.testclient import TestClient

from neardup.errors import (
    FileGoneError,
    IndexClosedError,
    IndexCorruptError,
    IndexLockedError,
    IndexNotFoundError,
    InternalError,
    ReadOnlyIndexError,
    WriterGoneError,
)
from neardup.index import Index
from neardup.service.app import create_app
from neardup.service.worker import WriterProcess


def _wait_dead(w: WriterProcess) -> None:
    deadline = time.time() + 30
    while w._conn is not None and time.time() < deadline:
        time.sleep(0.05)
    assert w._conn is None


def test_writes_after_another_process_took_the_lock_answer_503(index_dir, rain):
    w = WriterProcess(str(index_dir), {"sync": "group"})
    other = None
    try:
        with Index.open(index_dir) as ix:
            app = create_app(ix, writer=w)
            # raise_server_exceptions: an error the app does not answer fails the test
            with TestClient(app) as c:
                assert c.post("/v1/documents", json=rain[0]).status_code == 200
                os.kill(w.pid, signal.SIGKILL)  # its lock goes with it...
                _wait_dead(w)
                other = WriterProcess(str(index_dir))  # ...and another process takes it
                for r in (
                    c.post("/v1/documents", json=rain[1]),
                    c.post("/v1/documents?dry_run=true", json=rain[1]),
                    c.delete(f"/v1/documents/{rain[0]['id']}"),
                ):
                    assert r.status_code == 503, r.text
                    err = r.json()["error"]
                    assert err["code"] == "index_locked" and "index is locked by another process" in err["message"]
                    assert f"held by process {other.pid}" in err["message"]
                assert c.get(f"/v1/documents/{rain[0]['id']}").status_code == 200  # reads go on
                other.close()
                other = None
                # the lock is free again: the next write starts a writer process
                r = c.post("/v1/documents", json=rain[1])
                assert r.status_code == 200, r.text
    finally:
        if other is not None:
            other.close()
        w.close()


class _Failing:
    """A writer whose every write fails with `exc` (as a writer process that cannot start)."""

    def __init__(self, exc):
        self.exc = exc

    def _fail(self, *_):
        fut = Future()
        fut.set_exception(self.exc)
        return fut

    submit = dry_run = remove = _fail

    def close(self):
        pass


@pytest.mark.parametrize(
    "exc,status,code",
    [
        (WriterGoneError("the writer process exited"), 503, "writer_unavailable"),
        (IndexLockedError("index is locked: another writer is using ix (held by process 7)"), 503, "index_locked"),
        (IndexCorruptError("segment seg-1: bad checksum"), 500, "index_corrupt"),
        (FileGoneError("segment seg-1 is missing", "seg-1"), 500, "index_corrupt"),
        (IndexNotFoundError("no index in ix"), 503, "writer_unavailable"),
        (ReadOnlyIndexError("ix is read only"), 503, "writer_unavailable"),
        (IndexClosedError("the index is closed"), 503, "writer_unavailable"),
    ],
)
def test_each_writer_error_has_its_answer(index_dir, rain, exc, status, code):
    with Index.open(index_dir) as ix:
        with TestClient(create_app(ix, writer=_Failing(exc))) as c:
            for r in (
                c.post("/v1/documents", json=rain[0]),  # the fast path (fastpost.py)
                c.post("/v1/documents", json={"documents": rain[:2]}),
                c.post("/v1/documents?dry_run=true", json=rain[0]),
                c.post(
                    "/v1/documents",
                    content=b'{"id": "a", "text": "b c"}\n\n',  # FastAPI's path
                    headers={"content-type": "application/json; charset=utf-8", "x": "y"},
                ),
                c.delete("/v1/documents/a"),
            ):
                assert r.status_code == status, r.text
                err = r.json()["error"]
                assert err["code"] == code and str(exc) in err["message"]


def test_a_bug_in_the_writer_is_still_the_apps_500(index_dir, rain):
    with Index.open(index_dir) as ix:
        with TestClient(create_app(ix, writer=_Failing(InternalError("a bug"))), raise_server_exceptions=False) as c:
            r = c.post("/v1/documents", json=rain[0])
            assert r.status_code == 500 and r.json()["error"]["code"] == "internal_error"


class _Hung:
    """A writer that never answers (a writer process stopped or hung)."""

    def __init__(self):
        self.futures = []

    def _wait(self, *_):
        self.futures.append(Future())
        return self.futures[-1]

    submit = dry_run = remove = _wait

    def close(self):
        pass


@pytest.mark.parametrize(
    "method,url,body",
    [
        ("POST", "/v1/documents", {"id": "a", "text": "some words here"}),
        ("POST", "/v1/documents?dry_run=true", {"id": "a", "text": "some words here"}),
        ("DELETE", "/v1/documents/a", None),
    ],
)
def test_a_request_cut_off_at_shutdown_is_answered_503(index_dir, method, url, body):
    """uvicorn cancels the requests still running when its graceful shutdown times out: one
    waiting for the writer is answered 503 writer_unavailable (was uvicorn's 500)."""
    writer = _Hung()

    async def run():
        with Index.open(index_dir) as ix:
            app = create_app(ix, writer=writer)
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
                task = asyncio.ensure_future(c.request(method, url, json=body))
                while not writer.futures:
                    await asyncio.sleep(0.01)
                task.cancel()  # what uvicorn does at the end of its graceful shutdown
                return await task

    r = asyncio.run(run())
    assert r.status_code == 503, r.text
    err = r.json()["error"]
    assert err["code"] == "writer_unavailable" and "shutting down" in err["message"]
    assert writer.futures[0].cancelled()  # (the writer process's answer, if any, is dropped: below)


def test_an_answer_to_a_cancelled_request_does_not_stop_the_others(index_dir, rain):
    """The writer process's answers thread sets each request's future: one cancelled (a request
    cut off at shutdown) must not stop it (InvalidStateError), or the requests after it are
    never answered."""
    w = WriterProcess(str(index_dir))
    try:
        os.kill(w.pid, signal.SIGSTOP)
        cut, waiting = w.submit(rain[:1]), w.submit(rain[1:2])
        assert cut.cancel()
        time.sleep(0.2)
        os.kill(w.pid, signal.SIGKILL)
        with pytest.raises(WriterGoneError, match="unknown"):
            waiting.result(30)
        assert cut.cancelled()
        _wait_dead(w)
        # and a later write gets a new writer process
        assert [v["id"] for v in w.submit(rain[2:3]).result(120)] == [rain[2]["id"]]
    finally:
        w.close()


def test_a_delete_whose_scrub_fails_says_removed(client, monkeypatch):
    """The removal commits, overwriting the text then meets a full disk: 507 scrub_incomplete
    saying it is removed (committed), and the article is gone; the next writer's open scrubs."""
    import errno

    from neardup.index.core import Index as Ix

    assert (
        client.post("/v1/documents", json={"id": "gone", "text": "a story to remove from the index now"}).status_code
        == 200
    )

    def full(self, conn):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Ix, "_scrub", full)
    r = client.delete("/v1/documents/gone")
    assert r.status_code == 507, r.text
    err = r.json()["error"]
    assert err["code"] == "scrub_incomplete" and "(committed)" in err["message"]
    assert client.get("/v1/documents/gone").status_code == 404
