"""One suite against a real `neardup serve` on 127.0.0.1 (a subprocess started by the test)."""

import subprocess
import sys
import threading
import time

import httpx
import ix_corpus


def test_real_server_round_trip(server, rain, index_dir, tmp_path):
    with httpx.Client(base_url=server.url, timeout=30) as c:
        r = c.post("/v1/documents", json={"documents": rain})
        assert r.status_code == 200, r.text
        res = {v["id"]: v for v in r.json()["results"]}
        assert res["site-b-092"]["status"] == "duplicate" and res["site-b-092"]["keeper"] == "agency-001"
        assert c.get("/v1/documents/site-b-092").json()["keeper"] == "agency-001"
        cl = res["site-b-092"]["cluster"]
        assert c.get(f"/v1/clusters/{cl}").json()["size"] >= 3
        assert c.post("/v1/documents", content=b"[", headers={"content-type": "application/json"}).status_code == 400
        assert c.post("/v1/documents", json=rain[0]).status_code == 409
        assert (
            c.post("/v1/documents?dry_run=true", json={**rain[1], "id": "probe"}).json()["results"][0]["status"]
            == "duplicate"
        )
        assert c.delete("/v1/documents/site-b-092").json()["removed"] == 1
        assert c.get("/v1/documents/site-b-092").status_code == 404
        assert c.get("/openapi.json").json()["info"]["title"] == "neardup"
        # the service's own timings: the front's POSTs, the writer process's groups and the
        # WAL fsyncs its answers waited for (--sync full, the default)
        s = c.get("/v1/stats").json()["service"]
        assert s["writer"] == "process" and s["sync"] == "full"
        tm = s["timings"]
        assert tm["post"]["count"] == 2 and tm["post_dry_run"]["count"] == 1
        assert tm["group"]["count"] >= 1 and tm["wal_fsync"]["count"] >= 1 and tm["wal_fsync"]["max_ms"] > 0
    # one writer: a second server or a CLI add on the same index is refused, reading works
    r = subprocess.run(
        [sys.executable, "-m", "neardup.cli", "serve", str(index_dir), "--port", "1"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 6 and "index is locked" in r.stderr
    f = ix_corpus.write_jsonl(tmp_path / "x.jsonl", [{"id": "cli-1", "text": "a few words of text here"}])
    r = subprocess.run(
        [sys.executable, "-m", "neardup.cli", "index", "add", str(index_dir), f],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 6 and "index is locked" in r.stderr
    r = subprocess.run(
        [sys.executable, "-m", "neardup.cli", "index", "stats", str(index_dir)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0 and '"documents": 5' in r.stdout


def test_real_server_reads_during_batch_and_concurrent_writes(server):
    docs = [
        {"id": d["id"], "text": d["text"], "published_at": d["published_at"], "source": d["source"]}
        for d in ix_corpus.synth(originals=600, copies=200, bridges=0, words=300, seed=5)
    ]
    batch, singles = docs[:700], docs[700:]
    out = {}

    def post_batch():
        with httpx.Client(base_url=server.url, timeout=60) as c:
            out["batch"] = c.post("/v1/documents", json={"documents": batch})

    def post_singles(part):
        with httpx.Client(base_url=server.url, timeout=60) as c:
            for d in part:
                r = c.post("/v1/documents", json=d)
                assert r.status_code == 200, r.text

    threads = [threading.Thread(target=post_batch)] + [
        threading.Thread(target=post_singles, args=(singles[i::2],)) for i in range(2)
    ]
    for t in threads:
        t.start()
    seen = set()
    with httpx.Client(base_url=server.url, timeout=30) as c:
        while any(t.is_alive() for t in threads):
            n = c.get("/v1/stats").json()["documents"]
            seen.add(n)
            assert c.get("/v1/health").status_code == 200
            time.sleep(0.01)
        for t in threads:
            t.join()
        assert out["batch"].status_code == 200
        assert c.get("/v1/stats").json()["documents"] == len(docs)
    # the batch was never visible in part: every count seen is singles so far, plus 0 or all of the batch
    assert all(n <= len(singles) or n - len(batch) <= len(singles) for n in seen)
    assert all(n < len(batch) or n >= len(batch) for n in seen)


def test_real_server_writer_in_its_own_process_survives_its_death(server, rain):
    import os
    import signal

    with httpx.Client(base_url=server.url, timeout=60) as c:
        w = c.get("/v1/health").json()["writer"]
        assert w["kind"] == "process" and w["pid"] != server.proc.pid
        assert c.post("/v1/documents", json={"documents": rain[:3]}).status_code == 200
        os.kill(w["pid"], signal.SIGKILL)  # out of memory, a crash: the HTTP side stays up
        time.sleep(0.5)
        assert c.get("/v1/documents/" + rain[0]["id"]).status_code == 200  # reads never needed it
        # the stats answer without the dead writer's stages, and asking starts no new writer
        tm = c.get("/v1/stats").json()["service"]["timings"]
        assert tm["post"]["count"] == 1 and "group" not in tm
        time.sleep(1.0)
        h = c.get("/v1/health").json()  # the dead writer said, not reported as fine
        assert h["writer"]["pid"] in (w["pid"], None) and h["writer"]["alive"] is False and h["status"] == "degraded"
        r = c.post("/v1/documents", json={"documents": rain[3:]})  # a new writer process
        assert r.status_code == 200, r.text
        h = c.get("/v1/health").json()
        assert h["writer"]["pid"] not in (w["pid"], None) and h["writer"]["alive"] is True and h["status"] == "ok"
        assert c.get("/v1/stats").json()["documents"] == len(rain)
        assert c.post("/v1/documents", json=rain[0]).status_code == 409


def test_a_taken_port_is_said_before_the_index_is_opened(index_dir):
    # uvicorn's own bind failure exited with its code 3, neardup's "bad record"
    import socket
    import subprocess
    import sys

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        p = subprocess.run(
            [sys.executable, "-m", "neardup.cli", "serve", str(index_dir), "--host", "127.0.0.1", "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert p.returncode == 10, p.stderr
    assert f"neardup serve: cannot listen on 127.0.0.1:{port}: Address already in use" in p.stderr
    assert "Traceback" not in p.stderr
