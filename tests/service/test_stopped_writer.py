"""A writer that stops answering without dying, and the server's waits and limits as flags.

* GET /v1/health pings the writer (worker.py: its main loop answers between two groups;
  writer.py: the thread's lock): a writer process stopped with SIGSTOP answered "ok" while
  every POST waited for it forever. Now: 503 writer_not_answering, since when, what waits.
* A write waits at most --write-timeout (writes.py, Deadline), then 503 writer_timeout, its
  outcome unknown; the writer's late answer is dropped without harm, nothing is half written.
* Sending to a writer process that does not read never blocks the event loop (worker.py,
  _Outbox): with the writer stopped, 40 batch POSTs filled the socket's buffer and GET
  /v1/health, /v1/stats and the page answered nothing until it went on.
* --shutdown-timeout, --max-connections, --max-open-files (were constants), checked at start.

Every test that stops a process continues it (or the process is killed) in a finally.
"""

import contextlib
import os
import resource
import signal
import subprocess
import sys
import threading
import time

import httpx
import pytest
from fastapi.testclient import TestClient
from srv_helpers import Server, free_port, partial_requests, soft_fd_limit

from neardup.cli import main
from neardup.errors import InvalidParameterError, WriterGoneError
from neardup.index import Index
from neardup.service.app import create_app
from neardup.service.config import ServiceConfig
from neardup.service.server import serve
from neardup.service.views.health import STALL_GRACE
from neardup.service.worker import WriterProcess


@contextlib.contextmanager
def _stopped(pid: int):
    """`pid` stopped (SIGSTOP) for the block, always continued after it."""
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)


def _until(what, seconds=60.0):
    deadline = time.time() + seconds
    while not what():
        assert time.time() < deadline, "timed out"
        time.sleep(0.1)


def test_a_stopped_writer_process_is_said_and_writes_time_out(index_dir, rain):
    srv = Server(index_dir, "--write-timeout", "3")
    try:
        with httpx.Client(base_url=srv.url, timeout=30) as c:
            assert c.post("/v1/documents", json={"documents": rain[:3]}).status_code == 200
            h = c.get("/v1/health")
            assert h.status_code == 200 and h.json()["status"] == "ok", h.text
            assert h.json()["writer"]["answering"] is True
            pid = h.json()["writer"]["pid"]
            with _stopped(pid):
                t0 = time.time()
                h = c.get("/v1/health")  # was 200 "ok"
                assert h.status_code == 503, h.text
                assert time.time() - t0 < 10  # (a 2 s ping)
                body = h.json()
                w = body["writer"]
                assert body["status"] == "unavailable" and body["error"]["code"] == "writer_not_answering"
                assert w["alive"] is True and w["answering"] is False and w["pid"] == pid
                assert w["process_state"] == "stopped" and "kill -CONT" in body["error"]["message"]
                since = w["not_answering_since"]
                assert abs(since - time.time()) < 30 and w["not_answering_seconds"] >= 1.5

                # each write waits --write-timeout (was: forever), then 503 with its outcome unknown
                for method, url, body, words in (
                    ("POST", "/v1/documents", rain[3], ("unknown", "409")),
                    ("POST", "/v1/documents?dry_run=true", rain[4], ("writes nothing",)),
                    ("DELETE", f"/v1/documents/{rain[0]['id']}", None, ("unknown", "404")),
                ):
                    t0 = time.time()
                    r = c.request(method, url, json=body)
                    took = time.time() - t0
                    assert r.status_code == 503, r.text
                    err = r.json()["error"]
                    assert err["code"] == "writer_timeout" and "--write-timeout" in err["message"], err
                    assert all(word in err["message"] for word in words), err["message"]
                    assert 2.5 < took < 15, took

                # reads never needed the writer
                assert c.get(f"/v1/documents/{rain[1]['id']}").status_code == 200
                assert c.get("/v1/clusters").status_code == 200
                assert c.get("/").status_code == 200
                st = c.get("/v1/stats")
                assert st.status_code == 200 and st.json()["documents"] == 3
                assert "group" not in st.json()["service"]["timings"]  # the writer's stages left out

                # the same silence, counted from the first ping it did not answer
                h = c.get("/v1/health").json()
                assert h["writer"]["not_answering_since"] == since
                assert h["writer"]["requests_waiting"] >= 3  # the add, the dry run, the removal
            _until(lambda: c.get("/v1/health").status_code == 200)
            assert c.get("/v1/health").json()["writer"] == {
                "kind": "process",
                "pid": pid,
                "alive": True,
                "answering": True,
            }
            # the writer did what it was given, whole; its late answers were dropped without harm
            _until(lambda: c.get(f"/v1/documents/{rain[3]['id']}").status_code == 200)
            _until(lambda: c.get(f"/v1/documents/{rain[0]['id']}").status_code == 404)
            assert c.post("/v1/documents", json=rain[3]).status_code == 409  # the retry of an add that went in
            assert c.delete(f"/v1/documents/{rain[0]['id']}").status_code == 404
            r = c.post("/v1/documents", json={"documents": rain[4:]})
            assert r.status_code == 200, r.text
            assert c.get("/v1/stats").json()["documents"] == len(rain) - 1
    finally:
        err = srv.stop(wait=60)
    assert "Traceback" not in err and "InvalidStateError" not in err, err
    with Index.open(index_dir) as ix:
        assert ix.stats()["documents"] == len(rain) - 1
        assert ix.check()["texts"] == len(rain) - 1


def test_reads_and_health_answer_while_writes_pile_up_for_a_stopped_writer(index_dir):
    """40 batches (~800 KB) for a stopped writer process: the socket's buffer (~200 KB) is full
    after a fifth of them. The event loop used to block in the send: every GET waited."""
    srv = Server(index_dir, "--write-timeout", "60")
    try:
        with httpx.Client(base_url=srv.url, timeout=30) as c:
            pid = c.get("/v1/health").json()["writer"]["pid"]
            with _stopped(pid):

                def post(i):
                    docs = [
                        {"id": f"b{i}-{j}", "text": f"batch {i} article {j} " + "some words " * 90} for j in range(20)
                    ]
                    with contextlib.suppress(httpx.HTTPError):  # it gives up; the server keeps it
                        httpx.post(srv.url + "/v1/documents", json={"documents": docs}, timeout=3)

                posters = [threading.Thread(target=post, args=(i,)) for i in range(40)]
                for t in posters:
                    t.start()
                for t in posters:
                    t.join(60)
                for url in ("/v1/stats", "/", "/v1/clusters", "/v1/stats"):
                    t0 = time.time()
                    r = httpx.get(srv.url + url, timeout=10)  # (was: no answer)
                    assert r.status_code == 200 and time.time() - t0 < 5, (url, r.status_code)
                h = httpx.get(srv.url + "/v1/health", timeout=10)
                assert h.status_code == 503, h.text
                w = h.json()["writer"]
                assert w["requests_waiting"] >= 40 and w["unsent_bytes"] > 0, w
            # it reads what waited, in order, and adds each batch whole
            _until(lambda: c.get("/v1/stats").json()["documents"] == 800, 120)
            _until(lambda: c.get("/v1/health").status_code == 200)
            assert c.get("/v1/health").json()["writer"]["answering"] is True
    finally:
        err = srv.stop(wait=60)
    assert "Traceback" not in err, err
    with Index.open(index_dir) as ix:
        assert ix.stats()["documents"] == 800 and ix.check()["texts"] == 800


def test_sending_to_a_stopped_writer_process_never_blocks_and_is_bounded(index_dir, monkeypatch):
    w = WriterProcess(str(index_dir), unsent_max=1 << 20)
    try:
        big = [{"id": f"big-{i}", "text": f"article {i} " + "words and more words " * 500} for i in range(150)]
        with _stopped(w.pid):
            ping, since = w.ping()
            assert w.ping() == (ping, since)  # one at a time
            t0 = time.time()
            added = w.submit(big)  # ~1.6 MB: most of it waits in the front, not in the event loop's send
            refused = w.submit([{"id": "refused", "text": "a short article"}])  # over unsent_max waits
            assert time.time() - t0 < 2
            with pytest.raises(WriterGoneError, match="not sent, nothing of it is written"):
                refused.result(5)
            assert not ping.done() and not added.done()
            left = w.backlog()
            assert left["requests_waiting"] == 1 and left["unsent_bytes"] > 1 << 20, left
        assert ping.result(60) == {"pid": w.pid}
        assert [v["id"] for v in added.result(120)] == [r["id"] for r in big]
        assert w.backlog() == {"requests_waiting": 0, "unsent_bytes": 0}
        assert w.submit([{"id": "refused", "text": "a short article"}]).result(60)[0]["inserted"] is True
        assert w.ping()[0].result(60) == {"pid": w.pid}
    finally:
        w.close()
    with Index.open(index_dir) as ix:
        assert ix.stats()["documents"] == 151


def test_a_late_answer_after_the_timeout_harms_nothing(index_dir, rain):
    """The front gives up on a request (its future cancelled, as the write timeout does); the
    writer process answers it later: dropped (worker._settle), the others still answered."""
    w = WriterProcess(str(index_dir))
    try:
        with _stopped(w.pid):
            late, later = w.submit(rain[:1]), w.submit(rain[1:2])
            assert late.cancel()
        assert [v["id"] for v in later.result(60)] == [rain[1]["id"]]
        assert late.cancelled()
        assert [v["id"] for v in w.submit(rain[2:3]).result(60)] == [rain[2]["id"]]
    finally:
        w.close()
    with Index.open(index_dir) as ix:
        assert ix.stats()["documents"] == 3  # the one given up on went in, whole


def test_a_hung_writer_thread_times_out_and_skips_what_it_had_not_started(index_dir, rain):
    with Index.open(index_dir) as ix:
        app = create_app(ix, write_timeout=1)
        with TestClient(app) as c:
            assert c.post("/v1/documents", json=rain[0]).status_code == 200
            h = c.get("/v1/health")
            assert h.status_code == 200 and h.json()["writer"]["answering"] is True
            writer = app.state.writer
            writer.lock.acquire()  # a group that does not end
            try:
                t0 = time.time()
                r = c.post("/v1/documents", json=rain[1])
                assert r.status_code == 503 and r.json()["error"]["code"] == "writer_timeout", r.text
                assert 0.9 < time.time() - t0 < 10
                h = c.get("/v1/health")
                assert h.status_code == 503, h.text
                assert h.json()["writer"]["kind"] == "thread" and h.json()["writer"]["answering"] is False
                assert c.get("/v1/stats").status_code == 200
            finally:
                writer.lock.release()
            _until(lambda: c.get("/v1/health").status_code == 200)
            # the writer thread had taken the request but not started it: skipped, never written
            assert c.get(f"/v1/documents/{rain[1]['id']}").status_code == 404
            assert c.post("/v1/documents", json=rain[1]).status_code == 200


def test_a_writer_stopped_at_shutdown_is_killed_after_a_moment(index_dir, rain):
    """SIGTERM to a server whose writer process is stopped (SIGSTOP): the shutdown waited the
    writer's whole minute (STOP_WAIT) for a process that could not go on. Now it is killed once
    stopped for STOPPED_GRACE (2 s); the index is consistent and opens for writing after."""
    srv = Server(index_dir)
    try:
        with httpx.Client(base_url=srv.url, timeout=30) as c:
            assert c.post("/v1/documents", json={"documents": rain[:3]}).status_code == 200
            pid = c.get("/v1/health").json()["writer"]["pid"]
        os.kill(pid, signal.SIGSTOP)
        t0 = time.time()
        srv.proc.send_signal(signal.SIGTERM)
        srv.proc.wait(120)
        took = time.time() - t0
        assert took < 20, took  # (was over 60)
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)  # killed, and reaped
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)
        srv.stop()
    with Index.open(index_dir) as ix:
        ix._writer()  # the lock is free
        assert ix.stats()["documents"] == 3


def test_no_write_timeout(index_dir, rain):
    with Index.open(index_dir) as ix:
        for v in (0, None, "none"):
            assert create_app(ix, write_timeout=v).state.write_timeout is None
        assert create_app(ix).state.write_timeout == 60
        with pytest.raises(InvalidParameterError, match="--write-timeout"):
            create_app(ix, write_timeout=-1)
        with pytest.raises(InvalidParameterError, match="--health-timeout must be more than 0"):
            create_app(ix, health_timeout=0)


@pytest.mark.parametrize("kind", ["process", "thread"])
def test_a_writer_busy_with_a_long_group_is_up(index_dir, kind):
    """A batch of 10,000 articles keeps the writer process's loop in one group for longer than
    the health timeout (0.2 s here, 2 s by default: a max batch on a loaded host): health
    answered 503 writer_not_answering while the writer worked, which takes a server out of a
    load balancer's rotation for doing its job. Now 200 "ok" with the writer busy (it used
    the CPU while health waited); a stopped one is still 503 (the test above). The same with
    the writer in a thread of the server (its own CPU time, not the process's: the hung
    thread's test above is the 503 side)."""
    words = [f"w{i}" for i in range(5000)]
    docs = [
        {"id": f"b{n}", "text": " ".join(words[(n * 7 + j * 13) % 5000] for j in range(120))} for n in range(10_000)
    ]
    srv = Server(index_dir, "--writer", kind, "--health-timeout", "0.2", "--max-body", "50000000")
    try:
        with httpx.Client(base_url=srv.url, timeout=120) as c:
            posted = []
            t = threading.Thread(target=lambda: posted.append(c.post("/v1/documents", json={"documents": docs})))
            t.start()
            answers = []
            while t.is_alive():
                h = c.get("/v1/health")
                answers.append((h.status_code, h.json()))
                time.sleep(0.02)
            t.join()
            assert posted[0].status_code == 200, posted[0].text
            assert [a for a in answers if a[0] != 200] == [], [a for a in answers if a[0] != 200][:3]
            busy = [body for _, body in answers if body["writer"].get("answering") is False]
            # the group ran for seconds: health checks landed in it (at least one in ~50 ms steps)
            assert busy, answers
            for body in busy:
                w = body["writer"]
                assert body["status"] == "ok" and w["busy"] is True and w["seconds_since_cpu"] <= STALL_GRACE, body
                assert w["kind"] == kind and w.get("process_state") != "stopped" and "error" not in body
    finally:
        srv.stop()


@pytest.mark.parametrize(
    "kw,flag",
    [
        ({"shutdown_timeout": -1}, "--shutdown-timeout"),
        ({"shutdown_timeout": float("inf")}, "--shutdown-timeout"),
        ({"write_timeout": float("nan")}, "--write-timeout"),
        ({"max_connections": 0}, "--max-connections"),
        ({"max_connections": 2.5}, "--max-connections"),
        ({"max_open_files": True}, "--max-open-files"),
        ({"health_timeout": 0}, "--health-timeout"),
        ({"health_timeout": "2"}, "--health-timeout"),
    ],
)
def test_serve_checks_its_limits_before_opening_anything(tmp_path, kw, flag):
    with pytest.raises(InvalidParameterError, match=flag):
        serve(str(tmp_path / "no-index"), port=free_port(), **kw)
    # the config is checked where it is made, before serve sees it
    with pytest.raises(InvalidParameterError, match=flag):
        ServiceConfig(port=free_port(), **kw)
    assert not (tmp_path / "no-index").exists()


@pytest.mark.parametrize(
    "args",
    [
        ["--shutdown-timeout", "-1"],
        ["--shutdown-timeout", "nan"],
        ["--write-timeout", "soon"],
        ["--max-connections", "0"],
        ["--max-open-files", "many"],
        ["--health-timeout", "0"],
    ],
)
def test_the_flags_are_refused_with_their_name(tmp_path, capsys, args):
    with pytest.raises(SystemExit) as e:
        main(["serve", str(tmp_path), *args])
    assert e.value.code == 2
    assert f"argument {args[0]}: must be" in capsys.readouterr().err


def test_more_connections_than_the_open_files_allow_is_refused(index_dir):
    port = free_port()
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "neardup.cli",
            "serve",
            str(index_dir),
            "--port",
            str(port),
            "--max-connections",
            "100000000",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert p.returncode == 2, p.stderr
    assert "--max-connections 100,000,000 is over what the limit on open files allows" in p.stderr
    with Index.open(index_dir) as ix:
        ix._writer()  # its writer process let go of the lock


def test_the_connection_limit_the_shutdown_wait_and_the_open_files_are_flags(index_dir):
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 4096:
        pytest.skip(f"the hard limit on open files is {hard}")
    srv = Server(
        index_dir,
        "--max-connections",
        "8",
        "--shutdown-timeout",
        "2",
        "--max-open-files",
        "3000",
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 4096)),
    )
    socks = []
    try:
        assert soft_fd_limit(srv.proc.pid) == 3000
        pid = httpx.get(srv.url + "/v1/health", timeout=10).json()["writer"]["pid"]
        assert soft_fd_limit(pid) == 3000  # the writer process inherits it
        socks = partial_requests(srv.port, 8)
        time.sleep(0.5)
        r = httpx.get(srv.url + "/v1/health", timeout=10)
        assert r.status_code == 503 and r.text == "Service Unavailable"  # uvicorn's, past 8
        for s in socks:
            s.close()
        socks = []
        _until(lambda: httpx.get(srv.url + "/v1/health", timeout=10).status_code == 200, 10)
        # a body that never comes holds its request until the shutdown's wait: 2 s, not 10
        took = srv.shutdown_with_a_body_pending()
        assert 1.5 < took < 8, took
    finally:
        for s in socks:
            s.close()
        srv.stop()
