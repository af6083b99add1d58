"""The HTTP API at its edges (found by trying it as a demanding client would): what `fields`
may hold, ids a URL must carry, query parameters that would have inserted for real, bodies
FastAPI could not read, errors said in the client's terms, HEAD, emptied stories."""

import gzip

import pytest

TEXT = "heavy rain is likely over coastal karnataka and goa for the next three days said the office"


def _bad(r, field, index=0):
    assert r.status_code == 422, r.text
    e = r.json()["error"]
    assert e["code"] == "bad_document" and e["details"]["field"] == field and e["details"]["index"] == index
    return e


@pytest.mark.parametrize("name", ["id", "text", "title", "published_at", "source"])
def test_fields_must_not_name_the_articles_own_fields(client, name):
    # fields.source was taken as the source, fields.published_at escaped the time check, an id
    # or a text there was dropped without a word
    r = client.post(
        "/v1/documents",
        json={"documents": [{"id": "a", "text": TEXT}, {"id": "b", "text": TEXT, "fields": {name: "agency"}}]},
    )
    e = _bad(r, f"fields.{name}", index=1)
    assert "give it at the top level" in e["message"]
    assert client.get("/v1/stats").json()["documents"] == 0  # the batch: all or nothing


def test_fields_nested_at_most_64_levels(client):
    def nest(n):
        v = 1
        for _ in range(n):
            v = {"a": v}
        return v

    ok = client.post("/v1/documents", json={"id": "ok", "text": TEXT, "fields": {"x": nest(63)}})
    assert ok.status_code == 200, ok.text
    assert client.get("/v1/documents/ok").json()["fields"]["x"] == nest(63)  # readable back
    for depth in (65, 500):  # 500: was stored (then every GET failed), or a 500 on its way to the writer
        e = _bad(
            client.post("/v1/documents", json={"id": f"d{depth}", "text": TEXT, "fields": {"x": nest(depth)}}), "fields"
        )
        assert "nested deeper than 64 levels" in e["message"]
    deep = b'{"id": "deep", "text": "t", "fields": {"a": ' + b"[" * 3000 + b"]" * 3000 + b"}}"
    r = client.post("/v1/documents", content=deep, headers={"content-type": "application/json"})
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_json"


def test_an_id_with_slashes_is_read_and_removed(client):
    assert client.post("/v1/documents", json={"id": "site/a/1", "text": TEXT}).status_code == 200
    for url in ("/v1/documents/site%2Fa%2F1", "/v1/documents/site/a/1"):
        assert client.get(url).json()["id"] == "site/a/1"
        assert client.head(url).status_code == 200
    r = client.delete("/v1/documents/site%2Fa%2F1")
    assert r.status_code == 200 and r.json() == {"removed": 1, "id": "site/a/1"}
    assert client.get("/v1/documents/site/a/1").json()["error"]["code"] == "not_found"
    # a trailing slash alone names no document: the POST is redirected as before
    r = client.post("/v1/documents/", json={"id": "t", "text": TEXT}, follow_redirects=False)
    assert r.status_code == 307


def test_an_id_too_long_for_a_url_is_refused(client):
    _bad(client.post("/v1/documents", json={"id": "é" * 2049, "text": TEXT}), "id")
    assert client.post("/v1/documents", json={"id": "é" * 2048, "text": TEXT}).status_code == 200


@pytest.mark.parametrize(
    "query", ["dry-run=true", "dryrun=true", "DRY_RUN=true", "dry_run=true&dry_run=false", "dry_run=true&x=1"]
)
def test_a_query_that_is_not_one_dry_run_inserts_nothing(client, query):
    r = client.post(f"/v1/documents?{query}", json={"id": "q", "text": TEXT})
    assert r.status_code == 422 and r.json()["error"]["code"] == "invalid_request"
    assert client.get("/v1/stats").json()["documents"] == 0


def test_bodies_that_cannot_be_read_say_why(client):
    doc = b'{"id": "a", "text": "some words of a story"}'
    r = client.post("/v1/documents", content=doc, headers={"content-type": "application/x-www-form-urlencoded"})
    assert r.status_code == 415 and "Content-Type: application/json" in r.json()["error"]["message"]
    r = client.post(
        "/v1/documents",
        content=gzip.compress(doc),
        headers={"content-type": "application/json", "content-encoding": "gzip"},
    )
    assert r.status_code == 415 and "Content-Encoding 'gzip' is not supported" in r.json()["error"]["message"]
    r = client.post(
        "/v1/documents", content=b'{"id": "a", "text": "caf\xe9"}', headers={"content-type": "application/json"}
    )
    assert r.status_code == 400 and r.json()["error"] == {
        "status": 400,
        "code": "invalid_json",
        "message": "the body is not UTF-8 text (byte 0xe9 at offset 24)",
        "details": None,
    }
    r = client.post("/v1/documents", content=b"", headers={"content-type": "application/json"})
    assert r.status_code == 400 and "the body is empty" in r.json()["error"]["message"]


@pytest.mark.parametrize("encoding,first", [("utf-16", 0xFF), ("utf-32", 0xFF), ("utf-16-be", 0x00)])
def test_a_body_in_utf16_or_utf32_is_refused_naming_its_byte(client, encoding, first):
    """JSON over HTTP is UTF-8 (RFC 8259): json.loads, FastAPI's parser, took UTF-16 and UTF-32
    with a byte-order mark and the article was added; FF FE before UTF-8 text was "Expecting
    value", its byte unnamed."""
    doc = '{"id": "u", "text": "some words of a story"}'
    for body, at in (
        (doc.encode(encoding), f"byte 0x{first:02x} at offset 0"),
        (b"\xff\xfe" + doc.encode(), "byte 0xff at offset 0"),
    ):
        r = client.post("/v1/documents", content=body, headers={"content-type": "application/json"})
        assert r.status_code == 400, r.text
        err = r.json()["error"]
        assert err["code"] == "invalid_json" and err["message"] == f"the body is not UTF-8 text ({at})", err
    assert client.get("/v1/stats").json()["documents"] == 0


@pytest.mark.parametrize(
    "url,takes",
    [
        ("/v1/documents/a?x=1", "it takes none"),
        ("/v1/clusters?limt=3", "it takes limit, snippets"),
        ("/v1/clusters/1?text=true", "it takes texts"),
    ],
)
def test_a_get_with_a_query_parameter_it_does_not_take_says_so(client, url, takes):
    """A misspelt parameter (?text=true for texts) was ignored: the client got no texts and no
    word of why. POST refused one already; GET and DELETE now do too."""
    assert client.post("/v1/documents", json={"id": "a", "text": TEXT}).status_code == 200
    r = client.get(url)
    assert r.status_code == 422, r.text
    err = r.json()["error"]
    assert err["code"] == "invalid_request" and takes in err["message"]
    assert err["details"] == [
        {"where": f"query.{url.split('?')[1].split('=')[0]}", "problem": "unknown query parameter"}
    ]
    r = client.delete("/v1/documents/a?force=1")
    assert r.status_code == 422 and client.get("/v1/documents/a").status_code == 200  # not removed


def test_errors_name_the_field_not_the_models_insides(client):
    e = client.post("/v1/documents", json={"documents": [{"id": "a", "text": TEXT}, {"id": [1], "text": TEXT}]}).json()
    assert e["error"]["details"] == [
        {"where": "body.documents.1.id", "problem": "must be a string (not empty or only white space) or an integer"}
    ]
    e = client.post("/v1/documents", json={"id": "a", "text": TEXT, "published_at": True}).json()
    assert [d["where"] for d in e["error"]["details"]] == ["body.published_at"]
    e = client.post("/v1/documents", json={"id": "  ", "text": TEXT}).json()
    assert e["error"]["details"] == [{"where": "body.id", "problem": "must not be empty or only white space"}]


@pytest.mark.parametrize(
    "body,field,index",
    [
        (b'{"id": "a", "text": "x \\ud800 y"}', "text", 0),
        (b'{"documents": [{"id": "b", "text": "ok"}, {"id": "a\\udfff", "text": "x"}]}', "id", 1),
    ],
)
def test_a_lone_surrogate_in_the_text_or_the_id_is_a_bad_document(client, body, field, index):
    # as one in the title, the source or the fields was (docs/service.md)
    e = _bad(client.post("/v1/documents", content=body, headers={"content-type": "application/json"}), field, index)
    assert "lone surrogate" in e["message"]


@pytest.mark.parametrize("value", [1e13, -1e300, 2**70])
def test_a_number_past_the_years_of_dates_is_refused(client, value):
    e = _bad(client.post("/v1/documents", json={"id": "t", "text": TEXT, "published_at": value}), "published_at")
    assert "out of the range of times" in e["message"]


def test_reads_answer_as_the_post_did(client):
    client.post("/v1/documents", json={"id": 4242, "text": TEXT})
    v = client.post("/v1/documents", json={"id": "c", "text": TEXT + " again"}).json()["results"][0]
    d = client.get("/v1/documents/c").json()
    assert d["closest"] == v["closest"] == 4242 and d["closest_similarity"] == v["similarity"]
    assert client.delete("/v1/documents/4242").json() == {"removed": 1, "id": 4242}


def test_cluster_numbers_are_digits_and_an_emptied_story_is_gone(client):
    for bad in ("1_0", "+1", "1.0", "-1"):
        assert client.get(f"/v1/clusters/{bad}").status_code == 422
    cl = client.post(
        "/v1/documents", json={"documents": [{"id": "a", "text": TEXT}, {"id": "b", "text": TEXT}]}
    ).json()["results"][0]["cluster"]
    assert client.get(f"/v1/clusters/{cl}").json()["size"] == 2
    client.delete("/v1/documents/a")
    client.delete("/v1/documents/b")
    r = client.get(f"/v1/clusters/{cl}")
    assert r.status_code == 404 and "has no members any more" in r.json()["error"]["message"]


def test_head_wherever_get(client):
    for url in ("/", "/v1/health", "/v1/stats", "/v1/clusters"):
        r = client.head(url)
        assert r.status_code == 200 and r.content == b"", url
    assert client.head("/v1/documents/nope").status_code == 404
    assert "head" not in client.get("/openapi.json").json()["paths"]["/v1/health"]


@pytest.mark.parametrize("enc", ["gzip", "deflate", "br"])
@pytest.mark.parametrize("query", ["", "?dry_run=true"])
def test_a_content_encoding_is_refused_whatever_the_body(client, enc, query):
    """The header was ignored when the body happened to be plain JSON: inserted, 200."""
    for body in (
        b'{"id": "a", "text": "some words of a story"}',
        b'{"documents": [{"id": "b", "text": "some words of a story"}]}',
    ):
        r = client.post(
            f"/v1/documents{query}",
            content=body,
            headers={"content-type": "application/json; charset=utf-8", "content-encoding": enc},
        )
        assert r.status_code == 415 and f"Content-Encoding {enc!r} is not supported" in r.json()["error"]["message"]
    assert client.get("/v1/stats").json()["documents"] == 0
    r = client.post(
        "/v1/documents",
        content=b'{"id": "c", "text": "some words"}',
        headers={"content-type": "application/json", "content-encoding": "identity"},
    )
    assert r.status_code == 200
