"""``neardup index backup`` of an index a real ``neardup serve`` is writing: the service holds
the writer lock for its whole life, and the backup needs none. Articles are posted (and some
deleted) the whole time; each copy opens on its own, passes the check, holds only articles
posted by the time the backup ended, and every one acknowledged before it began (unless
deleted since)."""

import subprocess
import sys
import threading

import httpx
from srv_helpers import Server

from neardup.index import Index


def _articles(n: int) -> list[dict]:
    return [
        {"id": f"live-{i:04d}", "text": f"story {i} " + " ".join(f"w{(i * 7919 + j * 31) % 9973}" for j in range(60))}
        for i in range(n)
    ]


def test_a_backup_of_an_index_the_service_is_writing(index_dir, tmp_path):
    docs = _articles(600)
    srv = Server(index_dir)
    sent: list[str] = []
    acked: list[str] = []
    deleting: list[str] = []
    failures: list = []
    stop = threading.Event()

    def post():
        with httpx.Client(base_url=srv.url, timeout=60) as c:
            for i, d in enumerate(docs):
                if stop.is_set():
                    return
                sent.append(d["id"])
                r = c.post("/v1/documents", json=d)
                if r.status_code != 200:
                    failures.append(r.text)
                    return
                acked.append(d["id"])
                if i % 10 == 9:  # removes too: their texts are zeroed while the copies run
                    deleting.append(docs[i - 5]["id"])
                    r = c.delete(f"/v1/documents/{docs[i - 5]['id']}")
                    if r.status_code != 200:
                        failures.append(r.text)
                        return

    t = threading.Thread(target=post)
    try:
        with httpx.Client(base_url=srv.url, timeout=60) as c:
            assert c.post("/v1/documents", json={"documents": _articles(620)[600:]}).status_code == 200
        t.start()
        copies = []
        while t.is_alive() and len(copies) < 6 or len(copies) < 2:
            dest = tmp_path / f"copy{len(copies)}"
            before = set(acked)
            r = subprocess.run(
                [sys.executable, "-m", "neardup.cli", "index", "backup", str(index_dir), str(dest)],
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert r.returncode == 0, r.stderr
            assert "backed up:" in r.stdout and "checked" in r.stdout
            copies.append((dest, before, set(sent), set(deleting)))
        stop.set()
        t.join()
        assert failures == []
        with httpx.Client(base_url=srv.url, timeout=60) as c:
            assert c.get("/v1/health").status_code == 200  # the service went on throughout
    finally:
        stop.set()
        t.join()
        srv.stop()
    extra = {d["id"] for d in _articles(620)[600:]}
    sizes = []
    for dest, acked_before, sent_after, deleting_after in copies:
        with Index.open(dest) as b:
            b.check()
            ids = {str(r[0]) for r in b._conn().execute("SELECT id FROM documents")}
        assert extra <= ids and ids - extra <= sent_after, dest
        assert acked_before - deleting_after <= ids, dest
        sizes.append(len(ids))
    assert len(set(sizes)) >= 2, sizes  # copies of different moments while it wrote
