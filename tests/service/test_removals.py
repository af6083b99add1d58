"""POST /v1/removals: removal by id and eviction by age while the service holds the index
(``neardup index remove`` needs the writer lock, which the service holds for its whole life:
before this endpoint a served index could only lose articles one DELETE at a time). Each
request is one transaction of at most `limit` documents; `more` says whether older ones remain."""

import httpx
from srv_helpers import Server

from neardup.index import Index

DAY = 86400.0
NOW = 1_790_000_000.0


def _articles(n: int, start: int = 0, t0: float = NOW - 100 * DAY) -> list[dict]:
    # one article a day, oldest first, distinct stories
    return [
        {
            "id": f"a{i:03d}",
            "published_at": t0 + i * DAY,
            "text": f"story {i} " + " ".join(f"w{(i * 7919 + j * 31) % 9973}" for j in range(40)),
        }
        for i in range(start, start + n)
    ]


def test_eviction_by_age_in_bounded_steps(client):
    assert client.post("/v1/documents", json={"documents": _articles(60)}).status_code == 200
    cutoff = NOW - 100 * DAY + 25 * DAY  # a000 .. a024 are older
    steps = []
    while True:
        r = client.post("/v1/removals", json={"older_than": cutoff, "limit": 10})
        assert r.status_code == 200, r.text
        steps.append(r.json())
        if not r.json()["more"]:
            break
    assert steps == [{"removed": 10, "more": True}, {"removed": 10, "more": True}, {"removed": 5, "more": False}]
    assert client.get("/v1/documents/a024").status_code == 404
    assert client.get("/v1/documents/a025").status_code == 200
    assert client.get("/v1/stats").json()["documents"] == 35
    # nothing older left: a no-op
    assert client.post("/v1/removals", json={"older_than": cutoff}).json() == {"removed": 0, "more": False}


def test_an_age_as_text_and_ids_together(client):
    import time

    now = time.time()
    docs = _articles(5, t0=now - 40 * DAY) + _articles(3, start=50, t0=now - 2 * DAY - 50 * DAY)
    # a000..a004 published 40..36 days ago; a050..a052 2..0 days ago
    assert client.post("/v1/documents", json={"documents": docs}).status_code == 200
    r = client.post("/v1/removals", json={"older_than": "30d", "ids": ["a051"]})
    assert r.status_code == 200 and r.json() == {"removed": 6, "more": False}, r.text
    left = {i for i in ("a000", "a004", "a050", "a051", "a052") if client.get(f"/v1/documents/{i}").status_code == 200}
    assert left == {"a050", "a052"}


def test_bad_removals_are_refused_and_remove_nothing(client):
    assert client.post("/v1/documents", json={"documents": _articles(5)}).status_code == 200

    def refused(body, status, words, **kw):
        r = client.post("/v1/removals", json=body, **kw)
        assert r.status_code == status, (body, r.text)
        assert words in r.text, (body, r.text)

    refused({}, 422, "give ids, older_than, or both")
    refused({"ids": []}, 422, "give ids, older_than, or both")
    refused({"older_than": "yesterday-ish"}, 422, "older_than")
    refused({"older_than": True}, 422, "older_than")
    refused({"older_than": "30d", "limit": 0}, 422, "limit")
    refused({"older_than": "30d", "limit": 10**9}, 422, "limit")
    refused({"ids": ["a001", "nope"]}, 404, "nothing was removed")
    refused({"ids": ["a001", ""]}, 422, "ids")
    refused({"ids": "a001"}, 422, "ids")
    refused({"older_than": "30d", "surprise": 1}, 422, "surprise")
    refused({"older_than": "30d"}, 422, "unknown", params={"dry_run": "true"})
    refused({"ids": [f"x{i}" for i in range(501)]}, 413, "over the limit of 500")  # the client's max_batch
    refused({"older_than": 10**400}, 422, "finite number of seconds")
    assert client.get("/v1/stats").json()["documents"] == 5
    # a number with no fraction is an integer, as JSON Schema's "integer" says
    assert client.post("/v1/removals", json={"ids": [7.0], "limit": 5.0}).status_code == 404
    # the schema lists it
    assert "/v1/removals" in client.get("/openapi.json").json()["paths"]


def test_removals_through_a_writer_process(index_dir):
    """The real server (writer process by default): the request crosses to the writer process
    and back; the removal is durable before the answer (a fresh Index sees it)."""
    srv = Server(index_dir)
    try:
        with httpx.Client(base_url=srv.url, timeout=60) as c:
            assert c.post("/v1/documents", json={"documents": _articles(30)}).status_code == 200
            r = c.post("/v1/removals", json={"older_than": NOW - 100 * DAY + 12 * DAY, "limit": 100, "ids": ["a020"]})
            assert r.status_code == 200 and r.json() == {"removed": 13, "more": False}, r.text
            with Index.open(index_dir) as ix:
                assert ix.stats()["documents"] == 17
                assert ix.older_remain(NOW - 100 * DAY + 12 * DAY) is False
                assert ix.older_remain(NOW) is True
            assert c.post("/v1/removals", json={"ids": ["a020"]}).status_code == 404
    finally:
        srv.stop()
