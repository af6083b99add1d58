"""CPU per single-article POST /v1/documents in the front process, in-process: FastAPI's route
vs the fast path (python/neardup/service/fastpost.py).

The writer is a stub whose answer is ready (a completed Future of a fixed verdict), so what is
measured is the HTTP side alone: the whole ASGI app is driven with asyncio and fake receive/send,
no server, no sockets. Light: a few seconds of one core.

    python benchmarks/bench_fastpost.py [requests]
"""

import asyncio
import gc
import sys
import tempfile
import time
from concurrent.futures import Future

import orjson

from neardup.index import Index
from neardup.service.app import create_app
from neardup.service.fastpost import FastPost

VERDICT = {
    "id": "site-a-417",
    "status": "duplicate",
    "cluster": 12,
    "keeper": "agency-001",
    "is_keeper": False,
    "alternates": ["agency-001", "site-a-417"],
    "closest": "agency-001",
    "similarity": 0.91,
    "match": "near",
    "inserted": True,
}
BODY = orjson.dumps(
    {
        "id": "site-a-417",
        "source": "site-a",
        "published_at": "2026-07-12T06:40:00+05:30",
        "title": "Rain alert for coastal Karnataka, Goa",
        "text": "heavy rain is likely over coastal karnataka and goa for the next three days " * 12,
    }
)


class StubWriter:
    def _done(self, recs):
        f = Future()
        f.set_result([VERDICT for _ in recs])
        return f

    submit = dry_run = _done

    def close(self):
        pass


async def drive(app, n: int) -> float:
    """CPU seconds per request over `n` POSTs (after a warm-up)."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/v1/documents",
        "raw_path": b"/v1/documents",
        "root_path": "",
        "query_string": b"",
        "server": ("127.0.0.1", 8000),
        "client": ("127.0.0.1", 50000),
        "headers": [
            (b"host", b"127.0.0.1:8000"),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(BODY)).encode()),
        ],
    }
    status = []

    async def receive():
        return {"type": "http.request", "body": BODY, "more_body": False}

    async def send(msg):
        if msg["type"] == "http.response.start":
            status.append(msg["status"])

    for _ in range(200):
        await app(dict(scope), receive, send)
    assert set(status) == {200}, set(status)
    t0 = time.process_time()
    for _ in range(n):
        await app(dict(scope), receive, send)
    return (time.process_time() - t0) / n


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    with tempfile.TemporaryDirectory() as d:
        Index.create(d).close()
        with Index.open(d) as ix:
            out = {}
            for name, fast in (("FastAPI route", False), ("fast path", True)):
                app = create_app(ix, writer=StubWriter())
                if not fast:
                    app.user_middleware = [m for m in app.user_middleware if m.cls is not FastPost]
                gc.collect()
                out[name] = asyncio.run(drive(app, n))
                print(f"{name:14s} {out[name] * 1e3:.3f} ms CPU per request ({n:,} requests)")
            print(f"ratio {out['FastAPI route'] / out['fast path']:.1f}x")


if __name__ == "__main__":
    main()
