"""A URL names exactly the id it spells: an id ending in or holding a newline (routing.py, _IdPath and
anchor_routes). Starlette's routes end at "$", which also matches before a final newline, and
".+" stops at one: "GET /v1/documents/x%0A" was the document "x", "DELETE" of it removed "x",
and "in\\nside" could be posted but never read or removed."""


def test_ids_with_a_newline_are_named_exactly(client, rain):
    ids = ["x", "x\n", "in\nside", "\nlead"]
    for i, doc_id in enumerate(ids):
        r = client.post("/v1/documents", json={"id": doc_id, "text": rain[i + 2]["text"]})
        assert r.status_code == 200, r.text
    for doc_id, url in zip(ids, ["x", "x%0A", "in%0Aside", "%0Alead"]):
        r = client.get(f"/v1/documents/{url}")
        assert r.status_code == 200 and r.json()["id"] == doc_id, (url, r.text)
        assert client.head(f"/v1/documents/{url}").status_code == 200
    r = client.delete("/v1/documents/x%0A")
    assert r.status_code == 200 and r.json() == {"removed": 1, "id": "x\n"}
    assert client.get("/v1/documents/x").json()["id"] == "x"  # not the one removed
    assert client.get("/v1/documents/x%0A").json()["error"]["code"] == "not_found"
    r = client.delete("/v1/documents/in%0Aside")
    assert r.status_code == 200 and r.json()["id"] == "in\nside"
    assert client.get("/v1/documents/in%0Aside").status_code == 404
    assert client.delete("/v1/documents/x%0A").json()["error"]["code"] == "not_found"
    assert client.get("/v1/stats").json()["documents"] == 2  # "x" and "\\nlead"


def test_a_trailing_newline_names_no_other_route(client, rain):
    assert client.post("/v1/documents", json=rain[0]).status_code == 200
    # was /v1/stats, an add, the cluster list: now no route
    assert client.get("/v1/stats%0A").status_code == 404
    assert client.get("/v1/clusters%0A").status_code == 404
    r = client.post("/v1/documents%0A", json=rain[1])
    assert r.status_code in (404, 405), r.text
    assert client.get("/v1/stats").json()["documents"] == 1
    # a cluster number is digits only: "1\n" is not cluster 1
    assert client.get("/v1/clusters/1").status_code == 200
    r = client.get("/v1/clusters/1%0A")
    assert r.status_code == 422, r.text
