"""The HTTP API in-process (FastAPI TestClient): verdicts, reads, deletes, and every bad input."""

import threading
import time


def test_post_one_and_a_batch(client, rain):
    r = client.post("/v1/documents", json=rain[0])
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["inserted"] == 1 and body["results"][0]["status"] == "new"
    r = client.post("/v1/documents", json={"documents": rain[1:]})
    assert r.status_code == 200, r.text
    res = {v["id"]: v for v in r.json()["results"]}
    assert res["site-a-417"]["status"] == "duplicate" and res["site-a-417"]["keeper"] == "agency-001"
    assert res["site-a-417"]["closest"] == "agency-001" and 0.8 <= res["site-a-417"]["similarity"] < 1
    assert res["site-c-310"]["status"] == "new"
    cl = res["site-a-417"]["cluster"]
    assert set(res["site-b-092"]["alternates"]) >= {"site-a-417", "site-b-092"}
    # reads
    d = client.get("/v1/documents/site-a-417").json()
    assert d["cluster"] == cl and d["keeper"] == "agency-001" and d["match"] == "near" and d["text"]
    c = client.get(f"/v1/clusters/{cl}?texts=true").json()
    assert c["keeper"] == "agency-001" and c["members"][0]["is_keeper"] and c["size"] >= 3
    assert all(m["text"] for m in c["members"])
    cards = client.get("/v1/clusters").json()
    assert cards[0]["cluster"] == cl and cards[0]["snippet"]
    s = client.get("/v1/stats").json()
    assert s["documents"] == len(rain) and s["clusters"] == 1
    assert client.get("/v1/health").json()["status"] == "ok"
    assert "/v1/documents" in client.get("/openapi.json").json()["paths"]
    assert "neardup" in client.get("/").text


def test_dry_run_inserts_nothing(client, rain):
    client.post("/v1/documents", json=rain[0])
    r = client.post("/v1/documents?dry_run=true", json=rain[1])
    assert r.status_code == 200 and r.json()["dry_run"] is True and r.json()["inserted"] == 0
    v = r.json()["results"][0]
    assert v["status"] == "duplicate" and v["inserted"] is False
    assert client.get(f"/v1/documents/{rain[1]['id']}").status_code == 404
    assert client.get("/v1/stats").json()["documents"] == 1


def test_delete(client, rain):
    client.post("/v1/documents", json={"documents": rain})
    r = client.delete("/v1/documents/agency-001")
    assert r.status_code == 200 and r.json()["removed"] == 1
    assert client.get("/v1/documents/agency-001").status_code == 404
    d = client.get("/v1/documents/site-a-417").json()
    assert d["keeper"] != "agency-001"
    r = client.delete("/v1/documents/agency-001")
    assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"


def _error(r, status, code=None):
    assert r.status_code == status, r.text
    e = r.json()["error"]
    assert e["status"] == status and e["message"]
    if code:
        assert e["code"] == code
    return e


def test_bad_input_gets_4xx_json(client, rain):
    client.post("/v1/documents", json=rain[0])
    post = lambda **kw: client.post("/v1/documents", **kw)  # noqa: E731
    _error(post(content=b"{not json", headers={"content-type": "application/json"}), 400, "invalid_json")
    e = _error(post(json={"id": "x"}), 422, "invalid_request")
    assert "text" in e["message"]
    _error(post(json={"id": "x", "text": ""}), 422)
    e = _error(post(json={"id": "x", "text": "   \n  "}), 422, "invalid_request")
    assert "text" in e["message"]
    _error(post(json={"id": " ", "text": "words"}), 422, "invalid_request")
    _error(post(json={"id": "x", "text": 17}), 422)
    _error(post(json={"id": ["x"], "text": "some words here"}), 422)
    _error(post(json={"id": "x", "text": "words", "published_at": {"a": 1}}), 422)
    _error(post(json={"id": "x", "text": "words", "colour": "red"}), 422)
    _error(post(json={"documents": []}), 422)
    _error(post(json=[1, 2]), 422)
    _error(post(json={"id": "x", "text": "a" * 300_000}), 413, "body_too_large")
    _error(post(json={"documents": [{"id": f"n{i}", "text": "w"} for i in range(501)]}), 413, "batch_too_large")
    e = _error(post(json=rain[0]), 409, "duplicate_id")
    assert "agency-001" in e["message"]
    # a batch with one bad or duplicate document is refused whole
    e = _error(post(json={"documents": [rain[1], {"id": "y", "text": "  "}]}), 422, "invalid_request")
    assert e["message"].startswith("body.documents.1.text")
    e = _error(
        post(
            content=b'{"documents": [{"id": "ok", "text": "fine words"}, {"id": "s", "text": "bad \\ud800"}]}',
            headers={"content-type": "application/json"},
        ),
        422,
    )
    if e["code"] == "bad_document":
        assert e["details"]["index"] == 1
    _error(post(json={"documents": [rain[1], rain[2], rain[0]]}), 409)
    _error(post(json={"documents": [rain[1], rain[1]]}), 409)
    assert client.get("/v1/stats").json()["documents"] == 1
    _error(client.get("/v1/documents/nope"), 404)
    _error(client.get("/v1/clusters/999999"), 404)
    _error(client.get("/v1/clusters/abc"), 422)
    _error(client.get("/v1/nothing-here"), 404)
    # an unreadable publish time is refused (the keeper rule needs it), never stored as missing
    for bad in ("yesterday", "9999-12-31T23:59:59-05:00", 10**400, True):
        e = _error(post(json={"id": "t", "text": "some words here", "published_at": bad}), 422)
        assert e["message"].startswith("body: published_at") or "published_at" in e["message"], e
    e = _error(post(json={"id": "t", "text": "some words here", "published_at": "yesterday"}), 422, "bad_document")
    assert e["details"] == {
        "index": 0,
        "field": "published_at",
        "reason": "cannot parse 'yesterday' as a time (use ISO 8601, RFC 2822 or epoch seconds)",
    }
    e = _error(
        post(
            json={
                "documents": [
                    {"id": "t1", "text": "fine words"},
                    {"id": "t2", "text": "more words", "published_at": "9999-12-31T23:59:59-05:00"},
                ]
            }
        ),
        422,
        "bad_document",
    )
    assert e["message"].startswith("documents[1]: published_at:") and e["details"]["index"] == 1
    # a blank text or id is said in words, not as the regular expression that checks it
    e = _error(post(json={"id": "x", "text": " \t "}), 422, "invalid_request")
    assert e["message"] == "body.text: must not be empty or only white space"
    # a body that is not an object says what was expected
    e = _error(post(json=[{"id": "x", "text": "words"}]), 422, "invalid_request")
    assert "expected a JSON object, got an array of 1" in e["message"] and '{"documents": [...]}' in e["message"]
    assert client.get("/v1/stats").json()["documents"] == 1
    # a lone surrogate anywhere in an article (JSON allows it, UTF-8 does not) is that article's
    # error, naming the field; a field's name that holds one is answered escaped
    raw = lambda b: post(content=b, headers={"content-type": "application/json"})  # noqa: E731
    for body, field in [
        (b'{"id": "u", "text": "words", "source": "s\\ud800"}', "source"),
        (b'{"id": "u", "text": "words", "title": "t\\ud800"}', "title"),
        (b'{"id": "u", "text": "words", "fields": {"k": ["\\udfff"]}}', "k"),
        (b'{"id": "u", "text": "words", "fields": {"k\\ud800": 1}}', "k\\ud800"),
    ]:
        e = _error(raw(body), 422, "bad_document")
        assert e["details"]["field"] == field and "lone surrogate" in e["details"]["reason"], e
    assert client.get("/v1/stats").json()["documents"] == 1
    # lone surrogate in JSON text
    e = _error(
        post(content=b'{"id": "s", "text": "bad \\ud800 text"}', headers={"content-type": "application/json"}), 422
    )


def test_reads_are_served_during_a_batch_add(client):
    import ix_corpus

    docs = [
        {
            "id": d["id"],
            "text": d["text"],
            "published_at": d["published_at"],
            "source": d["source"],
            "fields": {"truth": d["truth"]},
        }
        for d in ix_corpus.synth(originals=300, copies=100, bridges=0, words=300, seed=3)
    ]
    out = {}

    def big():
        out["r"] = client.post("/v1/documents", json={"documents": docs})

    client.app.state.max_body = 50_000_000
    client.get("/v1/stats")  # warm up
    t = threading.Thread(target=big)
    t.start()
    lat = []
    while t.is_alive():
        t0 = time.perf_counter()
        r = client.get("/v1/health")
        lat.append(time.perf_counter() - t0)
        assert r.status_code == 200
        s = client.get("/v1/stats").json()
        assert s["documents"] in (0, len(docs))  # never half a batch
        time.sleep(0.005)
    t.join()
    assert out["r"].status_code == 200
    assert len(lat) >= 1
    assert client.get("/v1/stats").json()["documents"] == len(docs)
