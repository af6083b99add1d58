"""The fast path of POST /v1/documents (fastpost.py) answers byte for byte as FastAPI does, and
leaves every request it is not sure about to FastAPI.

Two apps on two indexes made the same way get the same requests in the same order: one as
create_app builds it, one without the FastPost middleware (FastAPI alone). Their answers (status,
every header, body bytes) must be equal, and the fast path's count says which requests it took."""

import asyncio
import json

import pytest
from fastapi.testclient import TestClient

from neardup.index import Index
from neardup.service.app import create_app
from neardup.service.fastpost import FastPost

JSON = {"content-type": "application/json"}


def _fast(app) -> FastPost:
    a = app.middleware_stack
    while not isinstance(a, FastPost):
        a = a.app
    return a


@pytest.fixture
def pair(tmp_path):
    """(with the fast path, FastAPI alone): two TestClients on two indexes made the same way."""
    clients = []
    opened = []
    for name, fast in (("fast", True), ("plain", False)):
        Index.create(tmp_path / name, prefer_source=["agency"]).close()
        ix = Index.open(tmp_path / name)
        opened.append(ix)
        app = create_app(ix, max_body=200_000, max_batch=500)
        if not fast:
            app.user_middleware = [m for m in app.user_middleware if m.cls is not FastPost]
        clients.append(TestClient(app, raise_server_exceptions=False).__enter__())
    yield clients
    for c in clients:
        c.__exit__(None, None, None)
    for ix in opened:
        ix.close()


def _same(pair, url, *, taken, content=None, json_=None, headers=None):
    """Send the request to both apps; their answers are equal, and the fast path took it or not."""
    fast, plain = pair
    before = _fast(fast.app).taken
    rs = [
        c.post(
            url,
            content=content() if callable(content) else content,
            json=json_,
            headers=headers,
            follow_redirects=False,
        )
        for c in pair
    ]
    assert rs[0].status_code == rs[1].status_code, (rs[0].text, rs[1].text)
    assert rs[0].headers.raw == rs[1].headers.raw
    assert rs[0].content == rs[1].content
    assert _fast(fast.app).taken - before == (1 if taken else 0)
    return rs[0]


def test_valid_requests_answered_the_same(pair, rain):
    assert pair[0].app.openapi() == pair[1].app.openapi()  # the route is still FastAPI's
    r = _same(pair, "/v1/documents", json_=rain[0], taken=True)
    assert r.status_code == 200 and r.json()["inserted"] == 1
    assert r.headers["content-type"] == "application/json"
    r = _same(pair, "/v1/documents?dry_run=true", json_=rain[1], taken=True)
    assert r.json()["dry_run"] is True and r.json()["results"][0]["status"] == "duplicate"
    r = _same(pair, "/v1/documents?dry_run=false", json_={"documents": rain[1:3]}, taken=True)
    assert r.json()["inserted"] == 2
    r = _same(pair, "/v1/documents", json_={"documents": rain[3:]}, taken=True)
    assert r.status_code == 200
    # an integer id (and 600.0, the integer 600), every optional field
    _same(pair, "/v1/documents", json_={"id": 17, "text": "a story of its own about the harbour"}, taken=True)
    r = _same(
        pair,
        "/v1/documents",
        content=b'{"id": 600.0, "text": "another story entirely, on trains"}',
        headers=JSON,
        taken=True,
    )
    assert r.json()["results"][0]["id"] == 600
    r = _same(
        pair,
        "/v1/documents",
        json_={
            "id": "f-1",
            "text": "the budget session opens on monday with a vote on the new rail fares",
            "title": "Budget",
            "source": "agency",
            "published_at": 1_780_000_000.5,
            "fields": {"desk": "politics", "tags": ["budget", {"a": [1, 2.5, None, True]}]},
        },
        taken=True,
    )
    assert r.status_code == 200
    _same(
        pair,
        "/v1/documents",
        json_={"id": "f-2", "text": "a wholly different report on cricket scores", "published_at": 1_780_000_100},
        taken=True,
    )
    # a content type with parameters, any case
    _same(
        pair,
        "/v1/documents?dry_run=true",
        json_=None,
        content=json.dumps(rain[2]).encode(),
        headers={"content-type": "Application/JSON; charset=utf-8"},
        taken=True,
    )
    # errors of valid requests: from the shared function, the same both ways
    r = _same(pair, "/v1/documents", json_=rain[0], taken=True)
    assert r.status_code == 409 and r.json()["error"]["code"] == "duplicate_id"
    r = _same(
        pair, "/v1/documents", json_={"documents": [{"id": f"n{i}", "text": "w"} for i in range(501)]}, taken=True
    )
    assert r.status_code == 413 and r.json()["error"]["code"] == "batch_too_large"
    r = _same(
        pair,
        "/v1/documents",
        json_={"documents": [{"id": "t", "text": "one text"}, {"id": "t", "text": "two texts"}]},
        taken=True,
    )
    assert r.status_code == 409
    r = _same(pair, "/v1/documents", content=b'{"id": "u", "text": "  bad \\u0000 words"}', headers=JSON, taken=True)
    added = 10 + (r.status_code == 200)
    stats = [c.get("/v1/stats").json()["documents"] for c in pair]
    assert stats[0] == stats[1] == added


def test_everything_else_is_left_to_fastapi(pair, rain):
    _same(pair, "/v1/documents", json_=rain[0], taken=True)
    post = lambda body, taken=False, url="/v1/documents", headers=JSON: _same(  # noqa: E731
        pair, url, content=body, headers=headers, taken=taken
    )
    assert post(b"{not json").json()["error"]["code"] == "invalid_json"
    assert post(b"").json()["error"]["code"] == "invalid_json"  # (empty: not "got null")
    assert post(b"null").status_code == 422
    assert post(b"[1, 2]").status_code == 422
    # json.loads reads these, orjson does not
    post(b'{"id": "nan", "text": "words of a story", "published_at": NaN}')
    post(b'{"id": "inf", "text": "words of a story", "published_at": 1e400}')
    post(b'\xef\xbb\xbf{"id": "bom", "text": "words of a story"}')
    assert post(b'{"id": "s", "text": "bad \\ud800 text"}').status_code == 422
    # an integer beyond 64 bits: orjson reads a float, json an int
    r = post(b'{"id": 18446744073709551617, "text": "a story with a very large id"}')
    assert r.status_code == 200 and b"18446744073709551617" in r.content
    post(b'{"id": "big", "text": "words", "fields": {"n": -9223372036854775809}}')
    # nested deeper than the fast path looks
    post(b'{"id": "deep", "text": "a deep one", "fields": {"x": ' + b"[" * 100 + b"]" * 100 + b"}}")
    # invalid documents: FastAPI's 422 bodies
    e = post(json.dumps({"id": "x"}).encode())
    assert e.status_code == 422 and "text" in e.json()["error"]["message"]
    post(json.dumps({"id": "x", "text": "words", "colour": "red"}).encode())
    post(json.dumps({"documents": [rain[1], {"id": "y", "text": "  "}]}).encode())
    post(json.dumps({"documents": []}).encode())
    # another content type, none, another query, a Content-Length over the limit, a body without one
    doc = json.dumps({"id": "other", "text": "a story about the monsoon session"}).encode()
    post(doc, headers={"content-type": "text/plain"})
    post(doc, headers={"content-type": "application/json-seq"})
    post(doc, headers={})
    post(doc, url="/v1/documents?dry_run=1")
    post(doc, url="/v1/documents?dry_run=true&x=1")
    post(doc, url="/v1/documents?dry_run=maybe")
    assert post(doc, url="/v1/documents/").status_code == 307
    r = post(json.dumps({"id": "x", "text": "a" * 300_000}).encode())
    assert r.status_code == 413 and r.json()["error"]["code"] == "body_too_large"
    r = post(lambda: iter([doc[:10], doc[10:]]))  # chunked: no Content-Length
    assert r.status_code == 200
    # the limit is read per request
    for c in pair:
        c.app.state.max_body = 50
    assert post(json.dumps({"id": "z", "text": "just over fifty bytes of a text"}).encode()).status_code == 413


def test_unexpected_error_is_the_apps_500(pair, rain):
    def boom(recs):
        raise RuntimeError("boom")

    for c in pair:
        c.app.state.writer.submit = boom
    r = _same(pair, "/v1/documents", json_=rain[0], taken=True)
    assert r.status_code == 500 and r.json()["error"] == {
        "status": 500,
        "code": "internal_error",
        "message": "RuntimeError: boom",
        "details": None,
    }


def test_client_gone_before_the_body():
    """A disconnect while the body is read: nothing is sent, nothing is called."""

    async def app(scope, receive, send):
        raise AssertionError("not called")

    async def handle(body, dry_run):
        raise AssertionError("not called")

    fp = FastPost(app, path="/v1/documents", model=dict, limit=lambda: 1000, handle=handle)
    msgs = [{"type": "http.request", "body": b'{"id": 1, ', "more_body": True}, {"type": "http.disconnect"}]
    sent = []

    async def receive():
        return msgs.pop(0)

    async def send(m):
        sent.append(m)

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/v1/documents",
        "root_path": "",
        "query_string": b"",
        "headers": [(b"content-type", b"application/json"), (b"content-length", b"30")],
    }
    asyncio.run(fp(scope, receive, send))
    assert sent == [] and fp.taken == 0
